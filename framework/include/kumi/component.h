/* The component contract.
 *
 * A component is a shared object kumi_<framework>_<name>.so that exports
 * exactly one data symbol, kumi_<framework>_<name>_component, of type
 * `const struct kumi_component`.  The registry loads every kumi_*.so from
 * $(pkglibdir) and then from each folder of KUMI_COMPONENT_PATH; a file whose
 * names or ABI version do not match is refused with a one-line reason.
 *
 * Two versions are checked, each covering one thing:
 *  - KUMI_COMPONENT_ABI_VERSION covers struct kumi_component below, and
 *    nothing else: it changes when this struct changes shape.
 *  - Each framework's ops table (struct kumi_rpim_ops, kumi_p2p_ops,
 *    kumi_coll_ops) has a contract version of its own, MAJOR.MINOR
 *    (KUMI_<FW>_CONTRACT_MAJOR / _MINOR in kumi/<fw>.h), and starts with a
 *    struct kumi_ops_hdr that records the table's size and the version the
 *    component was built against (fill it with KUMI_<FW>_OPS_HDR).  The
 *    minor grows when an optional operation is added at the end of the
 *    table; the major changes on anything else (an operation removed,
 *    reordered or given another signature, a new operation every component
 *    must have).  Adding an optional operation at the end therefore bumps
 *    that framework's minor only, never KUMI_COMPONENT_ABI_VERSION, and
 *    components built earlier keep loading.
 *
 * The registry accepts a table of the same major and any minor whose size
 * covers at least the framework's mandatory part (KUMI_<FW>_OPS_MIN_SIZE),
 * and copies min(size, sizeof) bytes of it into a zero-filled, full-size
 * table of its own; the library only ever calls through that copy, so the
 * operations past the end of a shorter (older) table are NULL: absent.  A
 * table of another major, a shorter size, or that breaks a framework's own
 * rule (p2p: a capability flag without its operations) is refused with a
 * one-line reason naming both versions; kumi_info shows it.
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
 *   static const struct kumi_p2p_ops p2p_tcp_ops = {
 *       .hdr = KUMI_P2P_OPS_HDR,
 *       .caps = 0,                        (what it can do: KUMI_P2P_CAP_*)
 *       .init = p2p_tcp_init, ...
 *   };
 */
#ifndef KUMI_COMPONENT_H
#define KUMI_COMPONENT_H

#include <kumi/kumi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when struct kumi_component changes shape (the ops tables carry
 * versions of their own: see above and struct kumi_ops_hdr). */
#define KUMI_COMPONENT_ABI_VERSION 6     /* 2: p2p rget/pull; 3: coll schedule builders;
                                            4: coll comm_release; 5: p2p mem_reg/rma;
                                            6: every ops table starts with a kumi_ops_hdr
                                               (from here on, framework contracts are
                                               versioned on their own) */

/* The first member of every framework's ops table. */
struct kumi_ops_hdr {
    uint32_t size;                /* sizeof the table the component was built with */
    uint16_t major, minor;        /* the framework contract it was built against */
};
/* For KUMI_<FW>_OPS_HDR: the header of a table of type `type`. */
#define KUMI_OPS_HDR(type, major, minor) { (uint32_t)sizeof(type), (major), (minor) }

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
    const void *ops;              /* the framework's ops table (struct kumi_rpim_ops,
                                     kumi_p2p_ops, ...), starting with its
                                     struct kumi_ops_hdr */
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
