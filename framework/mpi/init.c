/* MPI_Init / MPI_Finalize / MPI_Abort and the glue to the rpim client.
 *
 * Start-up order: predefined objects; registry (components, parameters,
 * MPI_COMPONENTS); rpim client (or singleton); request layer (transports
 * publish addresses, fence, wire-up, per-peer transport); MPI_COMM_WORLD and
 * MPI_COMM_SELF with their collectives. */
#include "mpi/mpi_front.h"
#include "registry/registry.h"
#include "sched/sched.h"
#include "rma/rma.h"
#include <kumi/rpim.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_t main_thread;

int kumi_comm_init_predefined(void);
void kumi_comm_finalize_predefined(void);
void kumi_op_init(void);

static void init_fail(int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len;
    kumi_mpi_error_string(code, msg, &len);
    kumi_warn("MPI_Init failed: %s", msg);
    kumi_abort_job(1, msg);
}


static void framework_register_params(void)
{
    kumi_progress_register_params();
    kumi_rma_register_params();
    kumi_sched_register_params();
    kumi_memkinds_register_params();
    kumi_coll_register_params();
    kumi_gpu_register_params();
    kumi_accel_register_params();
    kumi_dpm_register_params();
    kumi_dpm_register_spawn_params();
    kumi_ckpt_register_params();
}

/* When libmpi is loaded (before kumi_info, mpiexec or MPI_Init open the registry). */
__attribute__((constructor)) static void framework_params_hook(void)
{
    kumi_registry_set_params_hook(framework_register_params);
}

/* ------------------------------------------------------------ runtime */
/* Start-up shared by MPI_Init and MPI_Session_init (called once, through
 * kumi_runtime_acquire in session.c). */
int kumi_runtime_start(void)
{
    kumi_errh_init();
    kumi_dt_init();
    kumi_op_init();
    const char *v = getenv("KUMI_VERBOSE");
    if (v) kumi_verbose_level = atoi(v);

    int rc = kumi_registry_open(1);
    if (!rc) rc = kumi_rpim_select();
    if (rc) return rc;
    kumi_log(1, "rank %d of %d on %s (rpim %s)", kumi_world_rank(), kumi_world_size(), kumi_hostname(),
             kumi_rpim_name());
    if ((rc = kumi_rpim_put("kumi.host", kumi_hostname()))) return rc;
    if ((rc = kumi_rpim_put("kumi.hostid", kumi_host_id()))) return rc;
    if ((rc = kumi_cpipe_publish())) return rc;    /* the accel component chosen, its pipelining published */
    if ((rc = kumi_sched_engine_init())) return rc;
    if ((rc = kumi_req_init())) return rc;
    kumi_part_register();                 /* the request kinds beyond send and receive */
    kumi_greq_register();
    kumi_sched_register();
    kumi_rma_register();
    kumi_idup_register();
    if ((rc = kumi_comm_init_predefined())) return rc;
    kumi_sched_engine_ready();            /* the progress thread's CPUs (the launch's bindings) */
    kumi_param_warn_unknown();
    return MPI_SUCCESS;
}

/* Shut-down when the last of MPI_Finalize / MPI_Session_finalize ends (the
 * caller has synchronised the job). */
void kumi_runtime_stop(void)
{
    kumi_sched_engine_stop();
    kumi_cpipe_stop();
    kumi_accel_finalize();
    kumi_req_finalize();
    kumi_rpim_finalize();
    kumi_comm_finalize_predefined();
}

/* ------------------------------------------------------- MPI functions */
int kumi_mpi_init_thread(int *argc, char ***argv, int required, int *provided)
{
    (void)argc;
    (void)argv;
    if (kumi_state != KUMI_STATE_PRE)
        kumi_err_fatal("MPI_Init: MPI is already %s", kumi_state == KUMI_STATE_INIT ? "initialized" : "finalized");
    main_thread = pthread_self();
    int rc = kumi_runtime_acquire();      /* starts the runtime unless a session did */
    if (rc) init_fail(rc);

    /* levels are ordered SINGLE < FUNNELED < SERIALIZED < MULTIPLE (the ABI's values are too) */
    kumi_thread_level = required;
    if (kumi_thread_level != MPI_THREAD_FUNNELED && kumi_thread_level != MPI_THREAD_SERIALIZED &&
        kumi_thread_level != MPI_THREAD_MULTIPLE)
        kumi_thread_level = required > MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    /* only ever switched on: a session may already have asked for MPI_THREAD_MULTIPLE */
    if (kumi_thread_level == MPI_THREAD_MULTIPLE) kumi_mt = true;
    if (provided) *provided = kumi_thread_level;
    kumi_state = KUMI_STATE_INIT;
    kumi_accel();                         /* an accel component in use: device buffers are staged */
    if ((rc = kumi_dpm_child_init())) init_fail(rc);   /* started by MPI_Comm_spawn: connect to the parents */
    kumi_ckpt_init_done();                /* kumi_ckpt_enable: the library lock on, checkpoints accepted */
    return MPI_SUCCESS;
}

int kumi_mpi_init(int *argc, char ***argv)
{
    int provided;
    return kumi_mpi_init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}

int kumi_mpi_finalize(void)
{
    struct kumi_comm *w = KUMI_COMM_WORLD;
    kumi_ckpt_finalize_start();            /* checkpoints refused from now on */
    kumi_gpu_finalize();                   /* device proxies (MPIX_Gpu_start) still running */
    /* attributes' delete callbacks: MPI_COMM_SELF's first, then MPI_COMM_WORLD's */
    int arc = kumi_attr_finalize();
    int brc = kumi_buffers_finalize();     /* buffered messages go out, buffers detached */
    if (!arc) arc = brc;
    int rc = w->coll.barrier((MPI_Comm)w);
    if (!rc) rc = arc;
    int rc2 = kumi_runtime_release(0);     /* stops the runtime unless a session still uses it */
    if (!rc) rc = rc2;
    kumi_state = KUMI_STATE_FINALIZED;
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_mpi_initialized(int *flag)
{
    if (!flag) return MPI_ERR_ARG;
    *flag = kumi_state != KUMI_STATE_PRE;
    return MPI_SUCCESS;
}

int kumi_mpi_finalized(int *flag)
{
    if (!flag) return MPI_ERR_ARG;
    *flag = kumi_state == KUMI_STATE_FINALIZED;
    return MPI_SUCCESS;
}

int kumi_mpi_abort(struct kumi_comm *comm, int errorcode)
{
    char msg[256];
    snprintf(msg, sizeof msg, "MPI_Abort(%s, %d) called by rank %d", comm->name[0] ? comm->name : "comm",
             errorcode, kumi_world_rank());
    kumi_abort_job(errorcode, msg);
}

int kumi_mpi_query_thread(int *provided)
{
    if (!provided) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Query_thread: argument provided is NULL"));
    *provided = kumi_thread_level;
    return MPI_SUCCESS;
}

int kumi_mpi_is_thread_main(int *flag)
{
    if (!flag) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_Is_thread_main: argument flag is NULL"));
    *flag = pthread_equal(main_thread, pthread_self());
    return MPI_SUCCESS;
}
