/* Typed parameters: <framework>_<component>_<name>.
 *
 * Value sources, highest first: the environment variable
 * KUMI_<FRAMEWORK>_<COMPONENT>_<NAME> (mpiexec --param name=value sets it for
 * every rank), then ~/.kumi/params.conf, then $(sysconfdir)/kumi-params.conf
 * (lines "name = value", # comments), then the default.
 *
 * Registration writes the current value into *storage at once, so a
 * component reads its parameters from plain variables.  Framework-level
 * parameters use component "base" (e.g. p2p_base_verbose), or framework
 * "kumi" for global ones, whose environment name does not repeat the prefix:
 * kumi_base_verbose is set with KUMI_BASE_VERBOSE.
 */
#ifndef KUMI_PARAM_H
#define KUMI_PARAM_H

#include <kumi/kumi.h>

#ifdef __cplusplus
extern "C" {
#endif

enum kumi_param_type {
    KUMI_PARAM_INT,      /* long long */
    KUMI_PARAM_SIZE,     /* size_t; accepts suffixes k, m, g (powers of 1024) */
    KUMI_PARAM_BOOL,     /* int 0/1; accepts 1/0, yes/no, true/false, on/off */
    KUMI_PARAM_DOUBLE,   /* double */
    KUMI_PARAM_STRING    /* const char * (owned by the registry) */
};

/* Levels as in MPI_T: 1-3 user, 4-6 tuner, 7-9 developer. */
#define KUMI_LEVEL_USER   1
#define KUMI_LEVEL_TUNER  4
#define KUMI_LEVEL_DEV    7

enum kumi_param_source {
    KUMI_PARAM_SRC_DEFAULT, KUMI_PARAM_SRC_FILE, KUMI_PARAM_SRC_ENV,
    KUMI_PARAM_SRC_RUNTIME      /* set while running (MPI_T_cvar_write) */
};

/* Register a parameter and store its current value in *storage.
 * Returns MPI_SUCCESS, or an error (bad value in the environment: the
 * default is kept and a warning printed). Registering the same name twice
 * returns the existing value. */
KUMI_EXPORT int kumi_param_register_int(const char *fw, const char *comp, const char *name,
                                        long long defval, const char *help, int level,
                                        long long *storage);
KUMI_EXPORT int kumi_param_register_size(const char *fw, const char *comp, const char *name,
                                         size_t defval, const char *help, int level,
                                         size_t *storage);
KUMI_EXPORT int kumi_param_register_bool(const char *fw, const char *comp, const char *name,
                                         int defval, const char *help, int level,
                                         int *storage);
KUMI_EXPORT int kumi_param_register_double(const char *fw, const char *comp, const char *name,
                                           double defval, const char *help, int level,
                                           double *storage);
KUMI_EXPORT int kumi_param_register_string(const char *fw, const char *comp, const char *name,
                                           const char *defval, const char *help, int level,
                                           const char **storage);

/* The registered parameter fullname may change while the library runs: its
 * storage (given at the first registration, which must live as long as the
 * process) is read where it is used, so that MPI_T_cvar_write may set it.
 * Others are read-only through MPI_T.  MPI_ERR_ARG if no such parameter. */
KUMI_EXPORT int kumi_param_set_runtime(const char *fullname);

/* 1 if the registered parameter fullname has its default value (no
 * environment variable, file or MPI_T write set it), 0 if one did, -1 if
 * there is no such parameter: for a default that a component adjusts at
 * start-up while a value the user gave is used as given. */
KUMI_EXPORT int kumi_param_is_default(const char *fullname);

#ifdef __cplusplus
}
#endif
#endif
