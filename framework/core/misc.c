/* Diagnostics, time, identity, version queries. */
#include "core/core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

KUMI_EXPORT int kumi_verbose_level;

int kumi_core_world_rank = 0, kumi_core_world_size = 1;
static char hostname[MPI_MAX_PROCESSOR_NAME];

int kumi_world_rank(void) { return kumi_core_world_rank; }
int kumi_world_size(void) { return kumi_core_world_size; }

const char *kumi_hostname(void)
{
    if (!hostname[0]) {
        if (gethostname(hostname, sizeof hostname - 1) != 0) strcpy(hostname, "localhost");
        hostname[sizeof hostname - 1] = 0;
    }
    return hostname;
}

double kumi_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void vprint(const char *tag, const char *fmt, va_list ap)
{
    char buf[2048];
    int n = snprintf(buf, sizeof buf, "kumi[%d]%s: ", kumi_core_world_rank, tag);
    if (n < 0) n = 0;
    vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    size_t len = strlen(buf);
    buf[len++] = '\n';
    /* one write: lines from several ranks never mix */
    ssize_t w = write(2, buf, len);
    (void)w;
}

void kumi_log(int level, const char *fmt, ...)
{
    if (level > kumi_verbose_level) return;
    va_list ap;
    va_start(ap, fmt);
    vprint("", fmt, ap);
    va_end(ap);
}

void kumi_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint("", fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------- MPI functions */
double kumi_mpi_wtime(void) { return kumi_time(); }

double kumi_mpi_wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int kumi_mpi_get_version(int *version, int *subversion)
{
    if (!version || !subversion)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_version: argument %s is NULL",
                                                version ? "subversion" : "version"));
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int kumi_mpi_get_library_version(char *version, int *resultlen)
{
    if (!version || !resultlen)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_library_version: argument %s is NULL",
                                                version ? "resultlen" : "version"));
    /* MPI_VERSION is the standard ABI's (mpi.h cannot say less and keep the ABI):
     * the string says what of the standard is not there yet (kumi_impl.h) */
    snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
             "Kumi %s (MPI %d.%d standard ABI %d.%d%s%s)", KUMI_VERSION_STRING, MPI_VERSION, MPI_SUBVERSION,
             MPI_ABI_VERSION, MPI_ABI_SUBVERSION, KUMI_NOT_IMPLEMENTED[0] ? "; not implemented yet: " : "",
             KUMI_NOT_IMPLEMENTED);
    *resultlen = (int)strlen(version);
    return MPI_SUCCESS;
}

int kumi_mpi_get_processor_name(char *name, int *resultlen)
{
    if (!name || !resultlen)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Get_processor_name: argument %s is NULL",
                                                name ? "resultlen" : "name"));
    snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", kumi_hostname());
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

int kumi_mpi_abi_get_version(int *abi_major, int *abi_minor)
{
    if (!abi_major || !abi_minor)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Abi_get_version: argument %s is NULL",
                                                abi_major ? "abi_minor" : "abi_major"));
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}
