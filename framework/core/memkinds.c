/* MPI 4.1 memory allocation kinds: the parameter kumi_base_memory_alloc_kinds
 * (mpiexec --memory-alloc-kinds) and the supported kinds among a request
 * (what MPI_Session_get_info, MPI_Comm_get_info and MPI_Win_get_info give). */
#include "core/core.h"
#include <kumi/param.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *memkinds_param;

void kumi_memkinds_register_params(void)
{
    kumi_param_register_string("kumi", "base", "memory_alloc_kinds", "mpi,system",
                               "Memory allocation kinds the program asks for in the World Model (MPI 4.1 "
                               "info key mpi_memory_alloc_kinds; mpiexec --memory-alloc-kinds); Kumi supports "
                               "system and mpi (restrictors alloc_mem, win_allocate, win_allocate_shared), and "
                               "MPI_Comm_get_info / MPI_Win_get_info answer those of the list",
                               KUMI_LEVEL_USER, &memkinds_param);
}

/* Is kind ("mpi:alloc_mem", "system", ...) one Kumi supports? */
static bool memkind_ok(const char *k, size_t n)
{
    if (n == 6 && !strncmp(k, "system", 6)) return true;
    if (n < 3 || strncmp(k, "mpi", 3) || (n > 3 && k[3] != ':')) return false;
    static const char *const rest[] = { "alloc_mem", "win_allocate", "win_allocate_shared" };
    for (size_t i = 3; i < n;) {        /* each ":restrictor" */
        size_t j = i + 1, e = j;
        while (e < n && k[e] != ':') e++;
        bool known = false;
        for (size_t r = 0; r < sizeof rest / sizeof rest[0]; r++)
            if (e - j == strlen(rest[r]) && !strncmp(k + j, rest[r], e - j)) known = true;
        if (!known) return false;
        i = e;
    }
    return true;
}

/* The kinds of the comma-separated list req that Kumi supports, in its order,
 * without repeats, into out (NULL req: the default "mpi,system"). */
void kumi_memkinds_supported(const char *req, char *out, size_t len)
{
    size_t o = 0;
    if (!req) req = "mpi,system";
    out[0] = 0;
    for (const char *p = req; *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',') e++;
        size_t n = (size_t)(e - p);
        while (n && p[n - 1] == ' ') n--;
        if (n && memkind_ok(p, n)) {
            bool dup = false;           /* already in out? */
            for (const char *q = out; *q && !dup;) {
                const char *qe = strchr(q, ',');
                size_t qn = qe ? (size_t)(qe - q) : strlen(q);
                dup = qn == n && !strncmp(q, p, n);
                q = qe ? qe + 1 : q + qn;
            }
            if (!dup && o + n + 2 <= len) {
                if (o) out[o++] = ',';
                memcpy(out + o, p, n);
                o += n;
                out[o] = 0;
            }
        }
        p = e;
    }
}

/* The World Model's answer (from the parameter). */
const char *kumi_memkinds_world(void)
{
    static char buf[256];
    kumi_memkinds_supported(memkinds_param, buf, sizeof buf);
    return buf;
}
