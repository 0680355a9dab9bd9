/* The ABIs Kumi provides, shared by mpiexec (abi.c: which one a program
 * needs) and kumi_info (which ones this installation has).
 *
 *   standard  the MPI 5.0 standard ABI 1.0: Kumi's own libmpi.so.0 (native),
 *             and libmpi_abi.so.1, the standard's library name, installed as
 *             <abi dir>/standard/libmpi_abi.so.1 -> <libdir>/libmpi.so.0
 *   ompi      Open MPI 4.x binaries: the shim <abi dir>/ompi/libmpi.so.40
 *             (+ libmpi_mpifh.so.40, libmpi_usempif08.so.40, libmpi_cxx.so.40)
 *   mpich     MPICH 3.1-4.x binaries (and others of the MPICH ABI: Intel MPI,
 *             MVAPICH): the shim <abi dir>/mpich/libmpich.so.12 (+ libmpi.so.12,
 *             libmpichfort.so.12, libmpifort.so.12, libmpicxx.so.12,
 *             libmpichcxx.so.12)
 *
 * The abi dir is <pkglibdir>/abi (<prefix>/lib/kumi/abi), where mpiexec
 * also finds the components; the environment variable KUMI_ABI_DIR replaces
 * it (tests, or shims installed elsewhere). */
#ifndef KUMI_MPIEXEC_ABI_H
#define KUMI_MPIEXEC_ABI_H

#include <stdlib.h>
#include <string.h>

#ifndef KUMI_PKGLIBDIR
#define KUMI_PKGLIBDIR "/usr/local/lib/kumi"
#endif

enum mx_abi { MX_ABI_NONE, MX_ABI_STANDARD, MX_ABI_OMPI, MX_ABI_MPICH, MX_ABI_UNSUPPORTED };

struct mx_abi_desc {
    enum mx_abi abi;
    const char *name;          /* --abi / KUMI_ABI value, folder under the abi dir */
    const char *what;          /* "Open MPI 4.x" */
    const char *main_lib;      /* the library that names it */
    const char *const *libs;   /* every library name of this ABI (main first), NULL-ended */
};

static const char *const mx_abi_standard_libs[] = { "libmpi_abi.so.1", NULL };
static const char *const mx_abi_ompi_libs[] = { "libmpi.so.40", "libmpi_mpifh.so.40", "libmpi_usempif08.so.40",
                                                "libmpi_usempi_ignore_tkr.so.40", "libmpi_usempi.so.40",
                                                "libmpi_cxx.so.40", NULL };
static const char *const mx_abi_mpich_libs[] = { "libmpich.so.12", "libmpi.so.12", "libmpichfort.so.12",
                                                 "libmpifort.so.12", "libmpicxx.so.12", "libmpichcxx.so.12", NULL };

/* the ABIs in the order kumi_info lists them */
static const struct mx_abi_desc mx_abis[] = {
    { MX_ABI_STANDARD, "standard", "MPI 5.0 ABI 1.0", "libmpi_abi.so.1", mx_abi_standard_libs },
    { MX_ABI_OMPI, "ompi", "Open MPI 4.x", "libmpi.so.40", mx_abi_ompi_libs },
    { MX_ABI_MPICH, "mpich", "MPICH 4.x", "libmpich.so.12", mx_abi_mpich_libs },
};
#define MX_NABIS ((int)(sizeof mx_abis / sizeof mx_abis[0]))

static inline const struct mx_abi_desc *mx_abi_desc(enum mx_abi a)
{
    for (int i = 0; i < MX_NABIS; i++)
        if (mx_abis[i].abi == a) return &mx_abis[i];
    return NULL;
}

/* --abi / KUMI_ABI naming a process of both foreign ABIs (shims of both, the GOT swap agent) */
#define MX_ABI_MIX_AGENT "libkumi_abimix.so"
static inline int mx_abi_is_mix(const char *s)
{
    return s && (!strcmp(s, "ompi+mpich") || !strcmp(s, "mpich+ompi"));
}

/* <pkglibdir>/abi, or $KUMI_ABI_DIR */
static inline const char *mx_abi_dir(void)
{
    const char *d = getenv("KUMI_ABI_DIR");
    return d && *d ? d : KUMI_PKGLIBDIR "/abi";
}

#endif
