/* mpiexec: which MPI ABI a program needs (abi.c). */
#ifndef KUMI_MPIEXEC_ABI_DETECT_H
#define KUMI_MPIEXEC_ABI_DETECT_H

#include <limits.h>
#include "abi.h"

struct mx_abi_result {
    enum mx_abi abi;
    char lib[256];            /* the library that decided (unsupported: the foreign one) */
    char by[PATH_MAX];        /* the library that needs it; "" when the program itself does */
    char where[PATH_MAX];     /* a foreign libmpi.so.0 / libmpi.so: the file found */
    int mixed;                /* needs both Open MPI's and MPICH's libraries */
    char other[256], other_by[PATH_MAX];   /* mixed: MPICH's library, and who needs it */
    unsigned libmask;         /* bit i: mx_abi_desc(abi)->libs[i] is needed */
    unsigned rpathmask;       /* bit i: ... and found through a DT_RPATH, before LD_LIBRARY_PATH */
    int nobjects;             /* ELF objects read */
};

/* Read the program at progpath (and what it needs, transitively); ldpath
 * is the LD_LIBRARY_PATH the ranks would have.  0 with r filled, or -1
 * when progpath is no ELF object of this machine (a script, say: r->abi is
 * MX_ABI_NONE).  A program that needs both the standard ABI's and a
 * foreign ABI's libraries gets the foreign one (its shim uses Kumi's
 * library anyway); Open MPI's and MPICH's together: unsupported, mixed. */
int mx_abi_detect(const char *progpath, const char *ldpath, struct mx_abi_result *r);

#endif
