/* Sessions (MPI-4): MPI_Session_init / finalize, process sets, groups from
 * process sets, MPI_Comm_create_from_group; and the reference count of the
 * runtime that MPI_Init and MPI_Session_init share.
 *
 * Process sets: "mpi://WORLD" (every process of the job) and "mpi://SELF".
 * The runtime is started by the first of MPI_Init / MPI_Session_init.
 * MPI_Finalize stops it when no session is left; the last
 * MPI_Session_finalize keeps it, so that a program can initialize and
 * finalize sessions again and again (and call MPI_Init after), and it is
 * stopped at process exit, after synchronising the job through the
 * bootstrap communicator as MPI_Finalize does through MPI_COMM_WORLD.  Once
 * stopped it cannot be started again in the same process.
 *
 * Memory allocation kinds (MPI-4.1 12.4.3, info key mpi_memory_alloc_kinds):
 * Kumi supports "system" (memory the program allocated itself) and "mpi"
 * (MPI_Alloc_mem, MPI_Win_allocate, MPI_Win_allocate_shared; restrictors
 * alloc_mem, win_allocate, win_allocate_shared); no accelerator memory.  A
 * request (Session_init's info, else parameter kumi_base_memory_alloc_kinds,
 * which mpiexec --memory-alloc-kinds sets) is answered with the supported
 * kinds among it: by MPI_Session_get_info for a session, and by
 * MPI_Comm_get_info and MPI_Win_get_info with the World Model's answer. */
#include <kumi/param.h>
#include "mpi/mpi_front.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;
static int rt_users;
static bool rt_exit_hook;

static enum { RT_DOWN, RT_UP, RT_STOPPED } rt_state;

/* At process exit, a runtime the sessions left running (their last
 * MPI_Session_finalize keeps it, so that MPI_Session_init may start new
 * sessions and MPI_Init may still come) is stopped: after synchronising the
 * job as the last MPI_Session_finalize did before, when no session is left
 * (unless the process fails: exit status not 0, so on_exit, not atexit);
 * without, when the program called MPI_Finalize but left sessions (the
 * launcher is told the process finalized).  Not if the program left a
 * session and never called MPI_Finalize, as for a program that ends
 * without MPI_Finalize. */
static void runtime_at_exit(int status, void *arg)
{
    (void)arg;
    if (pthread_mutex_trylock(&rt_lock) != 0) return;   /* exit() from inside a start or stop */
    if (rt_state == RT_UP && (rt_users == 0 || kumi_state == KUMI_STATE_FINALIZED)) {
        /* a process that fails (exit status not 0) waits for no one: the
           launcher ends the job */
        if (rt_users == 0 && status == 0) kumi_comm_boot_barrier();
        kumi_runtime_stop();
        rt_state = RT_STOPPED;
    }
    pthread_mutex_unlock(&rt_lock);
}

int kumi_runtime_acquire(void)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&rt_lock);
    if (rt_state == RT_STOPPED) {
        rc = kumi_error(MPI_ERR_OTHER, "the MPI runtime of this process has ended (MPI_Finalize) and cannot be "
                        "started again");
    } else {
        if (rt_state == RT_DOWN) rc = kumi_runtime_start();
        if (!rc) {
            rt_state = RT_UP;
            rt_users++;
            if (!rt_exit_hook) rt_exit_hook = on_exit(runtime_at_exit, NULL) == 0;
        }
    }
    pthread_mutex_unlock(&rt_lock);
    return rc;
}

/* session: the last MPI_Session_finalize keeps the runtime (stopped at exit,
 * above), so that sessions can be initialized and finalized again and again
 * (MPI 4.1 sec. 11.3); MPI_Finalize (the caller has synchronised the job
 * through MPI_COMM_WORLD) stops it when no session is left. */
int kumi_runtime_release(int session)
{
    pthread_mutex_lock(&rt_lock);
    if (rt_users > 0 && --rt_users == 0 && !session) {
        kumi_runtime_stop();
        rt_state = RT_STOPPED;
    }
    pthread_mutex_unlock(&rt_lock);
    return MPI_SUCCESS;
}

/* MPI_Session_init's binding resolves its error handler argument before the
 * runtime exists: the predefined handlers (and MPI_GROUP_EMPTY) are in the
 * handle table from the moment the library is loaded. */
__attribute__((constructor)) static void session_predefined(void)
{
    kumi_errh_init();
    kumi_group_init();
}

/* --------------------------------------------------------------- helpers */
static const char *const psets[] = { "mpi://WORLD", "mpi://SELF" };
#define NPSETS ((int)(sizeof psets / sizeof *psets))

static int session_err(struct kumi_session *s, int code)
{
    if (!s) return kumi_err_handle(NULL, code);
    return kumi_errh_invoke(s->errh, KUMI_ERRH_OBJ_SESSION, s->handle, kumi_err_in(code, kumi_call));
}

#define GET_SESSION(var, h, fn) \
    struct kumi_session *var = kumi_session_get(h); \
    if (!var) return kumi_err_handle(NULL, kumi_error(MPI_ERR_SESSION, "%s: argument session is %s", fn, \
                                     (h) == MPI_SESSION_NULL ? "MPI_SESSION_NULL" : "not a valid session"))

/* Index of a process set name (case-insensitive, as names are URIs), or -1. */
static int pset_index(const char *name)
{
    for (int i = 0; name && i < NPSETS; i++)
        if (!strcasecmp(name, psets[i])) return i;
    return -1;
}

static int info_new(struct kumi_info **out, const char *fn)
{
    *out = NULL;
    if (!(*out = kumi_info_dup(NULL))) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------- MPI functions */
/* The thread level named by an info value ("MPI_THREAD_MULTIPLE", ...), or -1. */
static int thread_level_of(const char *v)
{
    static const struct { const char *name; int level; } lv[] = {
        { "MPI_THREAD_SINGLE", MPI_THREAD_SINGLE }, { "MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED },
        { "MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED }, { "MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE } };
    for (size_t i = 0; v && i < sizeof lv / sizeof *lv; i++)
        if (!strcasecmp(v, lv[i].name)) return lv[i].level;
    return -1;
}

static const char *thread_level_name(int level)
{
    return level == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
         : level == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
         : level == MPI_THREAD_FUNNELED ? "MPI_THREAD_FUNNELED" : "MPI_THREAD_SINGLE";
}

/* The level a new session provides for the "thread_level" it asks for (-1:
 * none asked: the process's current level).  MPI_THREAD_MULTIPLE switches on
 * the library lock as MPI_Init_thread does.  That is safe here: while the
 * lock is off the process runs at MPI_THREAD_SERIALIZED or below, so by the
 * program's own promise no other thread is inside the library during this
 * call (MPI_Session_init itself runs without the lock), and none can be
 * between an entry point's lock and unlock. */
static int session_thread_level(int want)
{
    int cur = kumi_mt ? MPI_THREAD_MULTIPLE : kumi_thread_level;
    if (want == MPI_THREAD_MULTIPLE && !kumi_mt) {
        __atomic_store_n(&kumi_mt, true, __ATOMIC_SEQ_CST);
        kumi_log(2, "MPI_Session_init: thread level MPI_THREAD_MULTIPLE, library lock on");
        return MPI_THREAD_MULTIPLE;
    }
    if (want < 0 || want < cur) return cur;
    return want;
}

/* Errors of MPI_Session_init go to its errhandler argument (no session yet). */
static int init_err(struct kumi_errhandler *eh, int code)
{
    if (!eh) return kumi_err_handle(NULL, code);
    return kumi_errh_invoke(eh, KUMI_ERRH_OBJ_SESSION, MPI_SESSION_NULL, kumi_err_in(code, kumi_call));
}

int kumi_mpi_session_init(MPI_Info info, struct kumi_errhandler *errhandler, MPI_Session *session)
{
    static const char fn[] = "MPI_Session_init";
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_SESSION))
        return init_err(NULL, kumi_error(MPI_ERR_ARG, "%s: argument errhandler was not created for sessions", fn));
    if (!session) return init_err(errhandler, kumi_error(MPI_ERR_ARG, "%s: argument session is NULL", fn));
    struct kumi_info *in = NULL;
    if (info != MPI_INFO_NULL && (!(in = kumi_info_get(info))))
        return init_err(errhandler, kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn));
    struct kumi_session *s = calloc(1, sizeof *s);
    if (!s) return init_err(errhandler, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    s->info = kumi_info_dup(in);
    if (!s->info) {
        free(s);
        return init_err(errhandler, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    }
    int rc = kumi_runtime_acquire();
    if (rc) {
        kumi_info_release(s->info);
        free(s);
        return init_err(errhandler, rc);
    }
    /* "thread_level": the level asked for; Session_get_info answers the level provided */
    int level = session_thread_level(thread_level_of(kumi_info_value(s->info, "thread_level")));
    rc = kumi_info_set_value(s->info, "thread_level", thread_level_name(level));
    if (!rc) {                          /* the kinds asked for -> the kinds supported among them */
        char kinds[256];
        const char *req = kumi_info_value(s->info, "mpi_memory_alloc_kinds");
        if (req) kumi_memkinds_supported(req, kinds, sizeof kinds);
        else snprintf(kinds, sizeof kinds, "%s", kumi_memkinds_world());   /* the parameter's answer */
        rc = kumi_info_set_value(s->info, "mpi_memory_alloc_kinds", kinds);
    }
    if (rc) {
        kumi_info_release(s->info);
        free(s);
        kumi_runtime_release(1);
        return init_err(errhandler, rc);
    }
    s->magic = KUMI_MAGIC_SESSION;
    s->refs = 1;
    __atomic_add_fetch(&kumi_sessions_active, 1, __ATOMIC_SEQ_CST);
    s->handle = (MPI_Session)s;
    s->errh = errhandler;
    kumi_errh_retain(errhandler);
    *session = s->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_session_finalize(MPI_Session *session)
{
    static const char fn[] = "MPI_Session_finalize";
    if (!session) return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument session is NULL", fn));
    GET_SESSION(s, *session, fn);
    /* the session's buffer: its messages go out first, as MPI_Session_detach_buffer waits */
    int brc = kumi_bbuf_detach(&s->bbuf, fn, NULL, NULL, INT64_MAX);
    if (brc) return session_err(s, brc);
    kumi_errh_release(s->errh);
    s->errh = NULL;
    if (s->info) kumi_info_release(s->info);
    s->info = NULL;
    s->magic = KUMI_MAGIC_DEAD;
    kumi_session_unref(s);          /* freed once no group or communicator derives from it */
    *session = MPI_SESSION_NULL;
    __atomic_sub_fetch(&kumi_sessions_active, 1, __ATOMIC_SEQ_CST);
    int rc = kumi_runtime_release(1);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

int kumi_mpi_session_get_num_psets(MPI_Session session, MPI_Info info, int *npset_names)
{
    (void)info;
    GET_SESSION(s, session, "MPI_Session_get_num_psets");
    if (!npset_names)
        return session_err(s, kumi_error(MPI_ERR_ARG, "MPI_Session_get_num_psets: argument npset_names is NULL"));
    *npset_names = NPSETS;
    return MPI_SUCCESS;
}

int kumi_mpi_session_get_nth_pset(MPI_Session session, MPI_Info info, int n, int *pset_len, char *pset_name)
{
    static const char fn[] = "MPI_Session_get_nth_pset";
    (void)info;
    GET_SESSION(s, session, fn);
    if (!pset_len) return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument pset_len is NULL", fn));
    if (n < 0 || n >= NPSETS)
        return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument n is %d, must be in 0..%d", fn, n, NPSETS - 1));
    int need = (int)strlen(psets[n]) + 1;
    if (*pset_len <= 0) {
        *pset_len = need;
        return MPI_SUCCESS;
    }
    if (!pset_name) return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument pset_name is NULL", fn));
    snprintf(pset_name, (size_t)*pset_len, "%s", psets[n]);
    *pset_len = need;
    return MPI_SUCCESS;
}

int kumi_mpi_session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info)
{
    static const char fn[] = "MPI_Session_get_pset_info";
    GET_SESSION(s, session, fn);
    if (!info) return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument info is NULL", fn));
    int p = pset_index(pset_name);
    if (p < 0)
        return session_err(s, kumi_error(MPI_ERR_ARG, "%s: unknown process set \"%s\"", fn,
                                         pset_name ? pset_name : "(NULL)"));
    struct kumi_info *i;
    int rc = info_new(&i, fn);
    if (rc) return session_err(s, rc);
    char v[32];
    snprintf(v, sizeof v, "%d", p == 0 ? kumi_world_size() : 1);
    rc = kumi_info_set_value(i, "mpi_size", v);
    if (rc) {
        kumi_info_release(i);
        return session_err(s, rc);
    }
    *info = kumi_info_handle(i);
    return MPI_SUCCESS;
}

int kumi_mpi_session_get_info(MPI_Session session, MPI_Info *info_used)
{
    static const char fn[] = "MPI_Session_get_info";
    GET_SESSION(s, session, fn);
    if (!info_used) return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument info_used is NULL", fn));
    struct kumi_info *i = kumi_info_dup(s->info);
    if (!i) return session_err(s, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    *info_used = kumi_info_handle(i);
    return MPI_SUCCESS;
}

int kumi_mpi_session_set_errhandler(MPI_Session session, struct kumi_errhandler *errhandler)
{
    GET_SESSION(s, session, "MPI_Session_set_errhandler");
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_SESSION))
        return session_err(s, kumi_error(MPI_ERR_ARG, "MPI_Session_set_errhandler: argument errhandler was not "
                                         "created for sessions"));
    kumi_errh_retain(errhandler);
    kumi_errh_release(s->errh);
    s->errh = errhandler;
    return MPI_SUCCESS;
}

int kumi_mpi_session_get_errhandler(MPI_Session session, MPI_Errhandler *errhandler)
{
    GET_SESSION(s, session, "MPI_Session_get_errhandler");
    if (!errhandler)
        return session_err(s, kumi_error(MPI_ERR_ARG, "MPI_Session_get_errhandler: argument errhandler is NULL"));
    kumi_errh_retain(s->errh);
    *errhandler = s->errh->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_session_create_errhandler(MPI_Session_errhandler_function *session_errhandler_fn,
                                       MPI_Errhandler *errhandler)
{
    static const char fn[] = "MPI_Session_create_errhandler";
    if (!session_errhandler_fn || !errhandler)
        return kumi_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument %s is NULL", fn,
                                                errhandler ? "session_errhandler_fn" : "errhandler"));
    struct kumi_errhandler *e = NULL;
    int rc = kumi_errh_create(KUMI_ERRH_OBJ_SESSION, (MPI_Comm_errhandler_function *)session_errhandler_fn, &e);
    if (rc) return kumi_err_handle(NULL, rc);
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

/* Returns MPI_SUCCESS when the handler returns (MPI 4.1 sec. 9.3.5), as
 * MPI_Comm_call_errhandler does. */
int kumi_mpi_session_call_errhandler(MPI_Session session, int errorcode)
{
    GET_SESSION(s, session, "MPI_Session_call_errhandler");
    kumi_errh_invoke(s->errh, KUMI_ERRH_OBJ_SESSION, s->handle, errorcode);
    return MPI_SUCCESS;
}

int kumi_mpi_group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup)
{
    static const char fn[] = "MPI_Group_from_session_pset";
    GET_SESSION(s, session, fn);
    if (!newgroup) return session_err(s, kumi_error(MPI_ERR_ARG, "%s: argument newgroup is NULL", fn));
    int p = pset_index(pset_name);
    if (p < 0)
        return session_err(s, kumi_error(MPI_ERR_ARG, "%s: unknown process set \"%s\"", fn,
                                         pset_name ? pset_name : "(NULL)"));
    int n = p == 0 ? kumi_world_size() : 1;
    int *w = malloc(sizeof(int) * (size_t)n);
    if (!w) return session_err(s, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    if (p == 0)
        for (int i = 0; i < n; i++) w[i] = i;
    else
        w[0] = kumi_world_rank();
    struct kumi_group *g = kumi_group_derived(kumi_group_make(n, w), s);
    if (!g) return session_err(s, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    *newgroup = g->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                    struct kumi_errhandler *errhandler, MPI_Comm *newcomm)
{
    static const char fn[] = "MPI_Comm_create_from_group";
    int rc = MPI_SUCCESS;
    struct kumi_group *g = kumi_group_get(group);
    struct kumi_info *in = NULL;
    if (!g) rc = kumi_error(MPI_ERR_GROUP, "%s: argument group is not a valid group", fn);
    else if (!stringtag) rc = kumi_error(MPI_ERR_ARG, "%s: argument stringtag is NULL", fn);
    else if (!newcomm) rc = kumi_error(MPI_ERR_ARG, "%s: argument newcomm is NULL", fn);
    else if (info != MPI_INFO_NULL && (!(in = kumi_info_get(info))))
        rc = kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn);
    if (!rc) rc = kumi_comm_from_group(g, stringtag, in, errhandler, newcomm);
    if (!rc) return MPI_SUCCESS;
    /* no communicator yet: the handler given for the new one */
    if (errhandler && errhandler->kind != KUMI_ERRH_USER)
        return kumi_errh_invoke(errhandler, KUMI_ERRH_OBJ_COMM, MPI_COMM_NULL, kumi_err_in(rc, kumi_call));
    return kumi_err_handle(NULL, rc);
}
