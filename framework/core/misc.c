/* Diagnostics, time, identity, version queries. */
#include "core/core.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <kumi/rpim.h>

KUMI_EXPORT int kumi_verbose_level;

int kumi_core_world_rank = 0, kumi_core_world_size = 1;
static char hostname[MPI_MAX_PROCESSOR_NAME];

int kumi_world_rank(void) { return kumi_core_world_rank; }
int kumi_world_size(void) { return kumi_core_world_size; }

/* The name and the host id are found again in another process: a process
 * restarted from its checkpoint image (mpiexec --restart, maybe on another
 * host) has the old one's memory but a new process id. */
static int host_given;
static pid_t host_pid;

void kumi_set_hostname(const char *name)
{
    if (name && *name) {
        snprintf(hostname, sizeof hostname, "%s", name);
        host_given = 1;
    }
}

const char *kumi_hostname(void)
{
    if (!hostname[0] || (!host_given && host_pid != getpid())) {
        if (gethostname(hostname, sizeof hostname - 1) != 0) strcpy(hostname, "localhost");
        hostname[sizeof hostname - 1] = 0;
        host_pid = getpid();
    }
    return hostname;
}

/* "hostname/boot id/net namespace inode": see kumi.h.  The boot id tells
 * machines apart (and a rebooted one), the namespace inode the network
 * namespaces of one machine (each is a host of its own, with its own
 * addresses: ranks in two of them talk as if across hosts). */
const char *kumi_host_id(void)
{
    static char id[MPI_MAX_PROCESSOR_NAME + 96];
    static pid_t idpid;
    if (!id[0] || idpid != getpid()) {
        idpid = getpid();
        char boot[64] = "";
        struct stat st;
        unsigned long long ns = 0;
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
        if (f) {
            if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
            fclose(f);
            boot[strcspn(boot, "\n")] = 0;
        }
        if (stat("/proc/self/ns/net", &st) == 0) ns = (unsigned long long)st.st_ino;
        snprintf(id, sizeof id, "%s/%s/%llu", kumi_hostname(), boot, ns);
    }
    return id;
}

int kumi_same_host(int r)
{
    char h[KUMI_KVS_VAL_MAX];
    if (r == kumi_core_world_rank) return 1;
    if (kumi_rpim_get(r, "kumi.hostid", h, sizeof h) != MPI_SUCCESS) return 0;
    return strcmp(h, kumi_host_id()) == 0;
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

/* ------------------------------------------------ MPI 5.0 ABI information */
/* MPI_Abi_get_info: the sizes of the ABI's integer types. */
int kumi_mpi_abi_get_info(MPI_Info *info)
{
    static const char fn[] = "MPI_Abi_get_info";
    if (!info) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument info is NULL", fn));
    static const struct { const char *key; size_t size; } keys[] = {
        { "mpi_aint_size", sizeof(MPI_Aint) }, { "mpi_count_size", sizeof(MPI_Count) },
        { "mpi_offset_size", sizeof(MPI_Offset) } };
    struct kumi_info *i = kumi_info_dup(NULL);
    int rc = i ? MPI_SUCCESS : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (size_t k = 0; !rc && k < sizeof keys / sizeof *keys; k++) {
        char v[16];
        snprintf(v, sizeof v, "%zu", keys[k].size);
        rc = kumi_info_set_value(i, keys[k].key, v);
    }
    if (rc) {
        kumi_info_release(i);
        return kumi_err_handle(NULL, rc);
    }
    *info = kumi_info_handle(i);
    return MPI_SUCCESS;
}

/* The Fortran ABI (MPI 5.0 sec. 21.4.1).  Kumi's Fortran datatypes have the
 * sizes of its own Fortran support (gfortran's defaults: core/datatype.c),
 * so MPI_Abi_get_fortran_info always answers, and MPI_Abi_set_fortran_info
 * can only confirm them: its first call succeeds when every key it names
 * agrees with Kumi's value; a different value, and every later call, give
 * MPI_ERR_ABI ("only the first call affects the state of the MPI library";
 * here nothing changes).  Keys: mpi_{logical,integer,real,double_precision}_size
 * and mpi_<type>_supported for the optional types. */
static const struct { const char *key; MPI_Datatype dt; bool size; } fortran_keys[] = {
    { "mpi_logical_size", MPI_LOGICAL, true }, { "mpi_integer_size", MPI_INTEGER, true },
    { "mpi_real_size", MPI_REAL, true }, { "mpi_double_precision_size", MPI_DOUBLE_PRECISION, true },
    { "mpi_logical1_supported", MPI_LOGICAL1, false }, { "mpi_logical2_supported", MPI_LOGICAL2, false },
    { "mpi_logical4_supported", MPI_LOGICAL4, false }, { "mpi_logical8_supported", MPI_LOGICAL8, false },
    { "mpi_logical16_supported", MPI_LOGICAL16, false },
    { "mpi_integer1_supported", MPI_INTEGER1, false }, { "mpi_integer2_supported", MPI_INTEGER2, false },
    { "mpi_integer4_supported", MPI_INTEGER4, false }, { "mpi_integer8_supported", MPI_INTEGER8, false },
    { "mpi_integer16_supported", MPI_INTEGER16, false },
    { "mpi_real2_supported", MPI_REAL2, false }, { "mpi_real4_supported", MPI_REAL4, false },
    { "mpi_real8_supported", MPI_REAL8, false }, { "mpi_real16_supported", MPI_REAL16, false },
    { "mpi_complex4_supported", MPI_COMPLEX4, false }, { "mpi_complex8_supported", MPI_COMPLEX8, false },
    { "mpi_complex16_supported", MPI_COMPLEX16, false }, { "mpi_complex32_supported", MPI_COMPLEX32, false },
    { "mpi_double_complex_supported", MPI_DOUBLE_COMPLEX, false },
};
#define NFORTRAN_KEYS ((int)(sizeof fortran_keys / sizeof *fortran_keys))
static bool fortran_info_set;

static void fortran_value(int k, char *v, size_t len)
{
    size_t s = kumi_dt_predefined_size(fortran_keys[k].dt);
    if (fortran_keys[k].size) snprintf(v, len, "%zu", s);
    else snprintf(v, len, "%s", s ? "true" : "false");
}

int kumi_mpi_abi_get_fortran_info(MPI_Info *info)
{
    static const char fn[] = "MPI_Abi_get_fortran_info";
    if (!info) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument info is NULL", fn));
    struct kumi_info *i = kumi_info_dup(NULL);
    int rc = i ? MPI_SUCCESS : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    for (int k = 0; !rc && k < NFORTRAN_KEYS; k++) {
        char v[16];
        fortran_value(k, v, sizeof v);
        rc = kumi_info_set_value(i, fortran_keys[k].key, v);
    }
    if (rc) {
        kumi_info_release(i);
        return kumi_err_handle(NULL, rc);
    }
    *info = kumi_info_handle(i);
    return MPI_SUCCESS;
}

int kumi_mpi_abi_set_fortran_info(MPI_Info info)
{
    static const char fn[] = "MPI_Abi_set_fortran_info";
    struct kumi_info *in = kumi_info_get(info);
    if (!in)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_INFO, "%s: argument info is %s", fn,
                                                info == MPI_INFO_NULL ? "MPI_INFO_NULL" : "not a valid info object"));
    if (fortran_info_set)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ABI, "%s: the Fortran ABI information was already set (only "
                                                "the first call may set it)", fn));
    fortran_info_set = true;
    for (int k = 0; k < NFORTRAN_KEYS; k++) {
        const char *given = kumi_info_value(in, fortran_keys[k].key);
        char v[16];
        fortran_value(k, v, sizeof v);
        if (given && strcasecmp(given, v))
            return kumi_err_handle(NULL, kumi_error(MPI_ERR_ABI, "%s: %s is %s in Kumi's Fortran support, not %s "
                                                    "(Kumi's Fortran datatypes are fixed when it is built)", fn,
                                                    fortran_keys[k].key, v, given));
    }
    return MPI_SUCCESS;
}

/* Fortran .TRUE. / .FALSE. of each LOGICAL size: those of Kumi's Fortran
 * support (1 and 0, gfortran's), which its logical reductions use; so they
 * are always set, and MPI_Abi_set_fortran_booleans can only confirm them. */
static int bool_args(const char *fn, int logical_size, const void *t, const void *f)
{
    if (logical_size <= 0 || logical_size > 16 || (logical_size & (logical_size - 1)))
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument logical_size is %d, must be a power of "
                                                "two from 1 to 16", fn, logical_size));
    if (!t || !f)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn,
                                                t ? "logical_false" : "logical_true"));
    return MPI_SUCCESS;
}

static void bool_value(int logical_size, int value, unsigned char *out)
{
    memset(out, 0, (size_t)logical_size);
    if (!value) return;
    /* the integer 1 of that size, in this machine's byte order */
    uint16_t one = 1;
    if (*(unsigned char *)&one) out[0] = 1;
    else out[logical_size - 1] = 1;
}

int kumi_mpi_abi_get_fortran_booleans(int logical_size, void *logical_true, void *logical_false, int *is_set)
{
    static const char fn[] = "MPI_Abi_get_fortran_booleans";
    int rc = bool_args(fn, logical_size, logical_true, logical_false);
    if (rc) return rc;
    if (!is_set) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument is_set is NULL", fn));
    bool_value(logical_size, 1, logical_true);
    bool_value(logical_size, 0, logical_false);
    *is_set = 1;
    return MPI_SUCCESS;
}

int kumi_mpi_abi_set_fortran_booleans(int logical_size, void *logical_true, void *logical_false)
{
    static const char fn[] = "MPI_Abi_set_fortran_booleans";
    int rc = bool_args(fn, logical_size, logical_true, logical_false);
    if (rc) return rc;
    unsigned char t[16], f[16];
    bool_value(logical_size, 1, t);
    bool_value(logical_size, 0, f);
    if (memcmp(t, logical_true, (size_t)logical_size) || memcmp(f, logical_false, (size_t)logical_size))
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ABI, "%s: the Fortran LOGICAL*%d values are already set "
                                                "(.TRUE. is 1 and .FALSE. is 0 in Kumi's Fortran support and its "
                                                "logical reductions)", fn, logical_size));
    return MPI_SUCCESS;
}
