/* Component registry: discovery (libltdl), parameters, selection, listing.
 * Private to the framework and the tools (mpiexec, kumi_info). */
#ifndef KUMI_REGISTRY_H
#define KUMI_REGISTRY_H

#include <kumi/component.h>
#include <kumi/param.h>

enum kumi_comp_status {
    KUMI_COMP_FOUND,          /* loaded, not yet opened */
    KUMI_COMP_AVAILABLE,      /* opened; usable */
    KUMI_COMP_SELECTED,       /* in use by this process (set by the framework that uses it) */
    KUMI_COMP_UNAVAILABLE,    /* open() said no: reason */
    KUMI_COMP_EXCLUDED,       /* MPI_COMPONENTS left it out */
    KUMI_COMP_REFUSED         /* file refused (bad names / ABI version / duplicate): reason */
};

struct kumi_comp_entry {
    const struct kumi_component *comp;   /* the registry's copy of the component's struct,
                                            whose ops is the registry's full-size copy of
                                            its ops table (see registry.c); NULL when
                                            refused */
    char framework[64], name[64];        /* from the file name if refused early */
    char path[4096];                     /* file, or "(linked in)" */
    enum kumi_comp_status status;
    char reason[256];
    long long priority;                  /* value of <fw>_<name>_priority */
    void *handle;                        /* lt_dlhandle */
};

/* The layers above the registry (core, request layer, progress engine,
 * RMA, ...) register their parameters at registry open, so kumi_info lists
 * them too: mpi/init.c hands the registry the function that does it when
 * libmpi is loaded (the registry calls nothing above itself by name). */
void kumi_registry_set_params_hook(void (*fn)(void));

/* The frameworks this build knows (those with a contract header), in
 * listing order; ends with a NULL entry. */
extern const char *const kumi_frameworks[];
/* The contract version of framework's ops table that this library has
 * (KUMI_<FW>_CONTRACT_MAJOR / _MINOR); -1 for an unknown framework.  What a
 * component was built against is in its table's header, comp->ops. */
int kumi_registry_contract(const char *framework, unsigned *major, unsigned *minor);

/* Discover and load every component (linked-in, $(pkglibdir),
 * KUMI_COMPONENT_PATH), register their parameters (priority included) and
 * parse MPI_COMPONENTS.  With do_open, call open() on each component that
 * MPI_COMPONENTS keeps.  Returns MPI_SUCCESS, or an error code whose message
 * explains a bad MPI_COMPONENTS (unknown framework or component: the message
 * lists what exists).  Safe to call twice (second call is a no-op). */
int kumi_registry_open(int do_open);
/* kumi_registry_open(0), then open() on the components of one framework
 * only (mpiexec: the launchers; a launcher has no use for a GPU driver's or
 * a network library's start-up, nor for the threads they leave).  A later
 * kumi_registry_open(1) opens the rest. */
int kumi_registry_open_framework(const char *framework);
/* kumi_info: components' open() is asked for a listing (kumi_registry_listing()). */
void kumi_registry_set_listing(void);
void kumi_registry_close(void);

/* All entries (for kumi_info), in framework then name order. */
int kumi_registry_entries(struct kumi_comp_entry ***entries);

/* The usable components of a framework in order of preference: the order
 * given in MPI_COMPONENTS when the user listed them, else by priority
 * (highest first).  *n receives the count; the array stays valid until close. */
struct kumi_comp_entry **kumi_registry_available(const char *framework, int *n);

/* Parameters, for kumi_info and mpiexec. */
struct kumi_param_info {
    char fullname[192];                  /* <fw>_<comp>_<name> */
    const char *framework, *component, *name;
    enum kumi_param_type type;
    const char *help;
    int level;
    enum kumi_param_source source;
    char source_detail[4096];            /* env var name or file path */
    char value[1024];                    /* current value as text */
    char defval[1024];
    int runtime;                         /* changeable while running (kumi_param_set_runtime) */
};
int kumi_param_count(void);
const char *kumi_param_type_name(enum kumi_param_type t);   /* "int", "size", ... */
int kumi_param_get_info(int i, struct kumi_param_info *info);
/* MPI_T: index of a parameter (-1: none); its value in binary (long long,
 * size_t, int 0/1, double; a string into buf of len bytes); set a run-time
 * one (MPI_ERR_ACCESS: it is not; a string is copied). */
int kumi_param_index(const char *fullname);
int kumi_param_read(int i, void *buf, size_t len);
int kumi_param_write(int i, const void *buf);
/* Environment name of a parameter: KUMI_<FW>_<COMP>_<NAME> upper-cased. */
void kumi_param_envname(const char *fullname, char *out, size_t outlen);
/* Warn (once per process, only if KUMI_VERBOSE or on rank 0 of a job) about
 * KUMI_* variables that name no registered parameter. */
void kumi_param_warn_unknown(void);

/* (added) The message of the last error kumi_registry_open returned ("" if
 * none): lets tools print it without MPI_Init / MPI_Error_string. */
const char *kumi_registry_error(void);
/* (added) The parameter files consulted, in order (0: $(sysconfdir)/kumi-params.conf,
 * 1: ~/.kumi/params.conf); NULL past the end or when HOME is unset. */
const char *kumi_param_file_path(int i);

#endif
