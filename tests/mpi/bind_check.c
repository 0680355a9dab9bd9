/* bind_check: what mpiexec's binding gave this rank.  Prints
 *     rank R cpus LIST env LIST|-
 * (LIST from sched_getaffinity, env from KUMI_ENV_BIND_CPUS, kumi/rpim.h) and checks:
 *   always:    the CPU list, when set, equals the affinity, and comes with the
 *              level and index (absent together otherwise); every rank's
 *              key-value entries kumi.bind.* hold the same as its environment;
 *   distinct:  every rank is bound and no two ranks share a CPU;
 *   unbound:   no rank is bound and all have the same affinity;
 *   wrap N:    every rank is bound; ranks r and s have the same CPUs when
 *              r == s (mod N), and share none otherwise;
 *   KUMI_ENV_BIND_SHARED ("1") is set exactly on ranks whose core another
 *              rank has (wrap: r + N or r - N exists; distinct: none).
 * Used by tests/scripts/bind_report.sh and tests/mpi/bind.list. */
#define _GNU_SOURCE
#include <sched.h>
#include <kumi/rpim.h>
#include "kt.h"

static void cpulist(const cpu_set_t *s, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < CPU_SETSIZE; i++) {
        if (!CPU_ISSET(i, s)) continue;
        int j = i;
        while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, s)) j++;
        int n = j == i ? snprintf(out + len, cap - len, "%s%d", len ? "," : "", i)
                       : snprintf(out + len, cap - len, "%s%d-%d", len ? "," : "", i, j);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
        i = j;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "any";
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    cpu_set_t set;
    CPU_ZERO(&set);
    KT_CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "sched_getaffinity");
    char list[4096];
    cpulist(&set, list, sizeof list);
    const char *env = getenv(KUMI_ENV_BIND_CPUS);
    const char *lev = getenv(KUMI_ENV_BIND_LEVEL), *idx = getenv(KUMI_ENV_BIND_INDEX);
    printf("rank %d cpus %s env %s\n", rank, list, env ? env : "-");
    fflush(stdout);
    if (env) {
        KT_CHECK(strcmp(env, list) == 0, "bound to cpus %s but the affinity is %s", env, list);
        KT_CHECK(lev && (!strcmp(lev, "core") || !strcmp(lev, "package") || !strcmp(lev, "hwthread")),
                 "level %s", lev ? lev : "(unset)");
        KT_CHECK(idx && idx[0] >= '0' && idx[0] <= '9', "index %s", idx ? idx : "(unset)");
    } else {
        KT_CHECK(!lev && !idx && !getenv(KUMI_ENV_BIND_SHARED), "bind level/index/shared set without the cpus");
    }
    const char *shared = getenv(KUMI_ENV_BIND_SHARED);
    KT_CHECK(!shared || !strcmp(shared, "1"), "%s=%s", KUMI_ENV_BIND_SHARED, shared);
    int bound = env != NULL;
    int *all_bound = malloc(sizeof(int) * (size_t)size);
    cpu_set_t *all = malloc(sizeof(cpu_set_t) * (size_t)size);
    KT_CHECK(all && all_bound, "malloc");
    KT_MPI(MPI_Allgather(&bound, 1, MPI_INT, all_bound, 1, MPI_INT, MPI_COMM_WORLD));
    KT_MPI(MPI_Allgather(&set, (int)sizeof set, MPI_BYTE, all, (int)sizeof set, MPI_BYTE, MPI_COMM_WORLD));
    /* the key-value table: each rank's binding as its environment says */
    char mine[3][256], (*peers)[3][256] = malloc(sizeof *peers * (size_t)size);
    KT_CHECK(peers, "malloc");
    snprintf(mine[0], 256, "%s", env ? env : "");
    snprintf(mine[1], 256, "%s", lev ? lev : "");
    snprintf(mine[2], 256, "%s", idx ? idx : "");
    KT_MPI(MPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, peers, (int)sizeof mine, MPI_CHAR, MPI_COMM_WORLD));
    static const char *const keys[3] = { KUMI_KVS_BIND_CPUS, KUMI_KVS_BIND_LEVEL, KUMI_KVS_BIND_INDEX };
    for (int r = 0; r < size; r++)
        for (int k = 0; k < 3; k++) {
            char v[KUMI_KVS_VAL_MAX];
            int rc = kumi_rpim_get(r, keys[k], v, sizeof v);
            if (peers[r][k][0])
                KT_CHECK(rc == MPI_SUCCESS && strcmp(v, peers[r][k]) == 0, "rank %d key %s: '%s', expected '%s'",
                         r, keys[k], rc == MPI_SUCCESS ? v : "(missing)", peers[r][k]);
            else
                KT_CHECK(rc != MPI_SUCCESS, "rank %d (unbound) has key %s = '%s'", r, keys[k], v);
        }
    free(peers);
    int wrap = 0;
    if (!strcmp(mode, "wrap")) {
        KT_CHECK(argc > 2 && atoi(argv[2]) > 0, "wrap needs N");
        wrap = atoi(argv[2]);
    }
    /* KUMI_ENV_BIND_SHARED: exactly where another rank has the same slot */
    if (!strcmp(mode, "distinct")) KT_CHECK(!shared, "rank %d: %s set, but no rank shares its CPUs", rank, KUMI_ENV_BIND_SHARED);
    if (wrap) {
        int want = rank + wrap < size || rank - wrap >= 0;
        KT_CHECK(!shared == !want, "rank %d: %s %s, expected %s (wrap %d, %d ranks)", rank, KUMI_ENV_BIND_SHARED,
                 shared ? "set" : "unset", want ? "set" : "unset", wrap, size);
    }
    for (int r = 0; r < size; r++) {
        if (!strcmp(mode, "distinct") || wrap) KT_CHECK(all_bound[r], "rank %d is not bound", r);
        if (!strcmp(mode, "unbound")) {
            KT_CHECK(!all_bound[r], "rank %d is bound", r);
            KT_CHECK(CPU_EQUAL(&all[r], &all[0]), "ranks %d and 0 have different affinity", r);
        }
        for (int s = r + 1; s < size; s++) {
            cpu_set_t x;
            CPU_AND(&x, &all[r], &all[s]);
            if (!strcmp(mode, "distinct") || (wrap && (s - r) % wrap != 0))
                KT_CHECK(CPU_COUNT(&x) == 0, "ranks %d and %d share CPUs", r, s);
            if (wrap && (s - r) % wrap == 0)
                KT_CHECK(CPU_EQUAL(&all[r], &all[s]), "ranks %d and %d differ (wrap %d)", r, s, wrap);
        }
    }
    free(all);
    free(all_bound);
    KT_MPI(MPI_Finalize());
    return 0;
}
