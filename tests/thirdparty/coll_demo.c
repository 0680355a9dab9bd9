/* coll/demo: a third-party Kumi component, built outside the Kumi tree
 * against the installed headers (see README).  It is always available but
 * provides no collective operation, so selecting it changes nothing: a
 * minimal example of the component contract.
 *
 * The macros below let the tests build deliberately broken variants from
 * this one source (a real component leaves them alone):
 *   DEMO_ABI=N             claim component ABI version N
 *   DEMO_SYMBOL=sym        export the component under another symbol name
 *   DEMO_NAME="x"          put another component name inside
 */
#include <mpi.h>
#include <kumi/component.h>
#include <kumi/param.h>
#include <kumi/coll.h>

#ifndef DEMO_ABI
#define DEMO_ABI KUMI_COMPONENT_ABI_VERSION
#endif
#ifndef DEMO_SYMBOL
#define DEMO_SYMBOL kumi_coll_demo_component
#endif
#ifndef DEMO_NAME
#define DEMO_NAME "demo"
#endif

static int coll_demo_unavailable;          /* parameter coll_demo_unavailable */
static const char *coll_demo_greeting;     /* parameter coll_demo_greeting */

static void coll_demo_register(void)
{
    kumi_param_register_bool("coll", DEMO_NAME, "unavailable", 0,
                             "Make coll/demo say it cannot run here (for testing)", KUMI_LEVEL_DEV,
                             &coll_demo_unavailable);
    kumi_param_register_string("coll", DEMO_NAME, "greeting", "hello",
                               "A string parameter that does nothing", KUMI_LEVEL_USER, &coll_demo_greeting);
}

static int coll_demo_open(char *why, size_t whylen)
{
    if (coll_demo_unavailable) {
        /* no snprintf needed: a fixed reason */
        const char *r = "switched off by parameter coll_demo_unavailable";
        size_t i = 0;
        for (; r[i] && i + 1 < whylen; i++) why[i] = r[i];
        if (whylen) why[i] = '\0';
        return KUMI_UNAVAILABLE;
    }
    return KUMI_OK;
}

/* Provides nothing: every entry stays NULL, so other components serve all operations. */
static int coll_demo_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)comm;
    (void)priority;
    (void)fns;
    return KUMI_OK;
}

static const struct kumi_coll_ops coll_demo_ops = {
    .hdr = KUMI_COLL_OPS_HDR,              /* the coll contract this file was built against */
    .comm_query = coll_demo_comm_query,
};

KUMI_EXPORT const struct kumi_component DEMO_SYMBOL = {
    .abi_version = DEMO_ABI,
    .framework = "coll",
    .name = DEMO_NAME,
    .version = { 1, 2, 3 },
    .description = "Third-party example: available, provides no operation",
    .priority = 1,
    .register_params = coll_demo_register,
    .open = coll_demo_open,
    .close = NULL,
    .ops = &coll_demo_ops,
};
