/* The component contract.
 *
 * A component is a shared object kumi_<framework>_<name>.so that exports
 * exactly one data symbol, kumi_<framework>_<name>_component, of type
 * `const struct kumi_component`.  The registry loads every kumi_*.so from
 * $(pkglibdir) and then from each folder of KUMI_COMPONENT_PATH; a file whose
 * names or ABI version do not match is refused with a one-line reason.
 *
 * Define a component like this (the symbol must be KUMI_EXPORT):
 *
 *   KUMI_EXPORT const struct kumi_component kumi_p2p_tcp_component = {
 *       .abi_version = KUMI_COMPONENT_ABI_VERSION,
 *       .framework = "p2p", .name = "tcp",
 *       .version = { 0, 1, 0 },
 *       .description = "TCP sockets to any reachable host",
 *       .priority = 10,
 *       .register_params = p2p_tcp_register,
 *       .open = p2p_tcp_open, .close = p2p_tcp_close,
 *       .ops = &p2p_tcp_ops,
 *   };
 */
#ifndef KUMI_COMPONENT_H
#define KUMI_COMPONENT_H

#include <kumi/kumi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when struct kumi_component or any framework ops table changes. */
#define KUMI_COMPONENT_ABI_VERSION 5     /* 2: p2p rget/pull; 3: coll schedule builders;
                                            4: coll comm_release; 5: p2p mem_reg/rma */

struct kumi_component {
    int abi_version;              /* KUMI_COMPONENT_ABI_VERSION */
    const char *framework;        /* "rpim", "p2p", "coll", ... */
    const char *name;             /* "tcp" */
    int version[3];               /* major, minor, release */
    const char *description;      /* one line, for kumi_info */
    int priority;                 /* default of parameter <fw>_<name>_priority;
                                     higher wins */
    /* Register this component's parameters (kumi/param.h).  Called once,
     * before open, also by kumi_info (which never calls open in a listing
     * of parameters only).  May be NULL. */
    void (*register_params)(void);
    /* Decide whether the component can run here.  Return KUMI_OK, or
     * KUMI_UNAVAILABLE after writing a short reason into why[0..whylen).
     * May be NULL (always available). */
    int (*open)(char *why, size_t whylen);
    void (*close)(void);          /* may be NULL */
    const void *ops;              /* the framework's ops table
                                     (struct kumi_rpim_ops, kumi_p2p_ops, ...) */
};

/* For open(): 1 if MPI_COMPONENTS names this component in its framework's
 * keep-list (e.g. "p2p=self,ofi"), so a component that is costly to start
 * and has nothing to add by default can stay closed unless asked for. */
KUMI_EXPORT int kumi_component_named(const char *framework, const char *name);
/* For open(): 1 when the registry was opened by kumi_info, which asks every
 * component whether it could run here (and shows open()'s note: a component
 * that says KUMI_OK may still write one line into why, e.g. which device it
 * would use). */
KUMI_EXPORT int kumi_registry_listing(void);

#ifdef __cplusplus
}
#endif
#endif
