/* spawn_rpim: the launcher side of MPI_Comm_spawn through kumi_rpim_spawn
 * (kumi/rpim.h), before the MPI-level glue exists.  Used by
 * tests/scripts/spawn_rpim.sh.
 *
 * Parent modes (rank 0 asks mpiexec; every rank then goes on):
 *   one N              one command: N children ("child one")
 *   multi A B          two commands: A children ("child a"), B children ("child b")
 *   missing            a program that does not exist (alone, then next to a
 *                      good command): MPI_ERR_SPAWN, every errcode MPI_ERR_SPAWN,
 *                      nothing started; the parent goes on
 *   info KEY=VAL... N  one command of N children with these info keys
 *                      (expects success)
 *   infofail KEY=VAL... N   the same, expects MPI_ERR_SPAWN
 *   then ARGS...       two children running "child then ARGS..." (see below)
 *   badargs            bad arguments (MPI_ERR_ARG), then NULL errcodes/job id
 * Every parent rank prints "parent R: goes on ok" (then, with
 * SPAWN_PARENT_WAIT=SEC, sleeps and prints "parent R: finished after the
 * wait"); rank 0 prints "parent: child job JOBID (...)" or "parent: ...
 * refused: MESSAGE".
 *
 * Child: spawn_rpim child TAG [exit CODE | abort CODE | sleep SEC | fail-init]
 *   checks KUMI_SPAWNED=1, KUMI_PARENT_JOBID (not its own job id), the
 *   request's variables (SPAWN_A=alpha, SPAWN_B=port-x),
 *   then MPI_Init, an allreduce of the world ranks, and prints
 *   "child TAG rank R of N appnum A sum S parent P job J universe U cwd DIR host H". */
#include <limits.h>
#include <unistd.h>
#include <kumi/rpim.h>
#include "kt.h"

static const char *const child_env[] = { "SPAWN_A=alpha", "SPAWN_B=port-x", NULL };

static int child(int argc, char **argv)
{
    const char *tag = argc > 2 ? argv[2] : "?";
    const char *sp = getenv("KUMI_SPAWNED"), *pj = getenv("KUMI_PARENT_JOBID"), *me = getenv("KUMI_JOBID");
    const char *a = getenv("SPAWN_A"), *port = getenv("SPAWN_B"), *app = getenv("KUMI_APPNUM");
    if (!sp || strcmp(sp, "1")) KT_FAIL("child: KUMI_SPAWNED=%s", sp ? sp : "(unset)");
    if (!pj || !me || !strcmp(pj, me)) KT_FAIL("child: KUMI_PARENT_JOBID=%s KUMI_JOBID=%s", pj ? pj : "-", me ? me : "-");
    if (!a || strcmp(a, "alpha")) KT_FAIL("child: SPAWN_A=%s", a ? a : "(unset)");
    if (!port || strcmp(port, "port-x")) KT_FAIL("child: SPAWN_B=%s", port ? port : "(unset)");
    int rank, size, sum = 0;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (sum != size * (size - 1) / 2) KT_FAIL("child: allreduce %d, expected %d", sum, size * (size - 1) / 2);
    int *flag, univ = 0, f = 0;
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &flag, &f));
    if (f) univ = *flag;
    char cwd[PATH_MAX] = "?";
    if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "?");
    char hn[256] = "?";
    gethostname(hn, sizeof hn - 1);
    printf("child %s rank %d of %d appnum %s sum %d parent %s job %s universe %d cwd %s host %s\n", tag, rank, size,
           app ? app : "-", sum, pj, me, univ, cwd, hn);
    fflush(stdout);
    const char *act = argc > 3 ? argv[3] : "";
    int arg = argc > 4 ? atoi(argv[4]) : 0;
    if (!strcmp(act, "exit") && rank == 0) {
        MPI_Finalize();
        return arg;
    }
    if (!strcmp(act, "abort") && rank == 0) MPI_Abort(MPI_COMM_WORLD, arg);
    if (!strcmp(act, "sleep")) sleep((unsigned)arg);
    KT_MPI(MPI_Finalize());
    return 0;
}

/* rank 0 spawns; returns the MPI return code, errcodes[0..total) filled */
static int spawn(int ncmds, struct kumi_spawn_cmd *cmds, int *errcodes, char *jobid, size_t len)
{
    int total = 0;
    for (int i = 0; i < ncmds; i++) total += cmds[i].maxprocs;
    for (int i = 0; i < total; i++) errcodes[i] = -12345;
    return kumi_rpim_spawn(cmds, ncmds, child_env, errcodes, jobid, len);
}

static void expect_ok(int rc, const int *errcodes, int total, const char *jobid, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int l;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("%s: kumi_rpim_spawn: %s", what, s);
    }
    for (int i = 0; i < total; i++)
        if (errcodes[i] != MPI_SUCCESS) KT_FAIL("%s: errcodes[%d] = %d", what, i, errcodes[i]);
    const char *me = getenv("KUMI_JOBID");
    if (!jobid[0] || (me && !strcmp(me, jobid))) KT_FAIL("%s: child job id '%s' (own %s)", what, jobid, me ? me : "-");
    printf("parent: child job %s (%s)\n", jobid, what);
}

static void expect_fail(int rc, const int *errcodes, int total, const char *jobid, const char *what)
{
    int cls = -1;
    char s[MPI_MAX_ERROR_STRING] = "";
    int l;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, s, &l);
    if (cls != MPI_ERR_SPAWN) KT_FAIL("%s: class %d (%s), expected MPI_ERR_SPAWN", what, cls, s);
    for (int i = 0; i < total; i++)
        if (errcodes[i] != MPI_ERR_SPAWN) KT_FAIL("%s: errcodes[%d] = %d, expected MPI_ERR_SPAWN", what, i, errcodes[i]);
    if (jobid[0]) KT_FAIL("%s: a child job id '%s' although nothing started", what, jobid);
    printf("parent: %s refused: %s\n", what, s);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child")) return child(argc, argv);
    const char *mode = argc > 1 ? argv[1] : "one";
    int rank, size;
    KT_MPI(MPI_Init(&argc, &argv));
    KT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    KT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    char self[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) KT_FAIL("readlink /proc/self/exe");
    self[sl] = 0;
    char jobid[64] = "";
    int errcodes[64];
    if (rank == 0) {
        if (!strcmp(mode, "one")) {
            char *args[] = { "child", "one", NULL };
            struct kumi_spawn_cmd c = { self, args, argc > 2 ? atoi(argv[2]) : 3, 0, NULL, NULL };
            expect_ok(spawn(1, &c, errcodes, jobid, sizeof jobid), errcodes, c.maxprocs, jobid, "one command");
        } else if (!strcmp(mode, "multi")) {
            char *aa[] = { "child", "a", NULL }, *ab[] = { "child", "b", NULL };
            struct kumi_spawn_cmd c[2] = { { self, aa, argc > 2 ? atoi(argv[2]) : 1, 0, NULL, NULL },
                                           { self, ab, argc > 3 ? atoi(argv[3]) : 2, 0, NULL, NULL } };
            expect_ok(spawn(2, c, errcodes, jobid, sizeof jobid), errcodes, c[0].maxprocs + c[1].maxprocs, jobid,
                      "two commands");
        } else if (!strcmp(mode, "missing")) {
            char *args[] = { "child", "never", NULL };
            struct kumi_spawn_cmd c[2] = { { "/nonexistent/kumi_spawn_prog", args, 2, 0, NULL, NULL },
                                           { self, args, 1, 0, NULL, NULL } };
            expect_fail(spawn(1, c, errcodes, jobid, sizeof jobid), errcodes, 2, jobid, "missing program");
            struct kumi_spawn_cmd d[2] = { c[1], { "kumi_no_such_program_in_path", args, 2, 0, NULL, NULL } };
            expect_fail(spawn(2, d, errcodes, jobid, sizeof jobid), errcodes, 3, jobid, "good + missing program");
        } else if (!strcmp(mode, "info") || !strcmp(mode, "infofail")) {
            const char *keys[16], *vals[16];
            char kv[16][256];
            int ni = 0;
            for (int i = 2; i < argc - 1 && ni < 16; i++) {
                snprintf(kv[ni], sizeof kv[ni], "%s", argv[i]);
                char *eq = strchr(kv[ni], '=');
                if (!eq) KT_FAIL("info: %s is not KEY=VALUE", argv[i]);
                *eq = 0;
                keys[ni] = kv[ni];
                vals[ni] = eq + 1;
                ni++;
            }
            char *args[] = { "child", "info", NULL };
            const char *prog = self;
            for (int i = 0; i < ni; i++)            /* a program name for path= */
                if (!strcmp(keys[i], "path")) prog = "spawn_rpim";
            struct kumi_spawn_cmd c = { prog, args, atoi(argv[argc - 1]), ni, keys, vals };
            int rc = spawn(1, &c, errcodes, jobid, sizeof jobid);
            if (!strcmp(mode, "info")) expect_ok(rc, errcodes, c.maxprocs, jobid, "info");
            else expect_fail(rc, errcodes, c.maxprocs, jobid, "info");
        } else if (!strcmp(mode, "then")) {
            char *args[8] = { "child", "then", NULL };
            for (int i = 2; i < argc && i < 7; i++) args[i] = argv[i];
            args[argc < 7 ? argc : 7] = NULL;
            struct kumi_spawn_cmd c = { self, args, 2, 0, NULL, NULL };
            expect_ok(spawn(1, &c, errcodes, jobid, sizeof jobid), errcodes, 2, jobid, "then");
        } else if (!strcmp(mode, "badargs")) {
            /* bad arguments: MPI_ERR_ARG, nothing asked of mpiexec */
            char *args[] = { "child", "never", NULL };
            struct kumi_spawn_cmd c = { self, args, 0, 0, NULL, NULL };
            int cls = -1;
            MPI_Error_class(kumi_rpim_spawn(&c, 1, NULL, NULL, NULL, 0), &cls);
            if (cls != MPI_ERR_ARG) KT_FAIL("maxprocs 0: class %d", cls);
            c.maxprocs = 1;
            MPI_Error_class(kumi_rpim_spawn(&c, 0, NULL, NULL, NULL, 0), &cls);
            if (cls != MPI_ERR_ARG) KT_FAIL("0 commands: class %d", cls);
            const char *const bad_env[] = { "NO_EQUALS_SIGN", NULL };
            MPI_Error_class(kumi_rpim_spawn(&c, 1, bad_env, NULL, NULL, 0), &cls);
            if (cls != MPI_ERR_ARG) KT_FAIL("env without '=': class %d", cls);
            static char big[70000];
            memset(big, 'x', sizeof big - 1);
            char *bargs[] = { big, NULL };
            struct kumi_spawn_cmd b = { self, bargs, 1, 0, NULL, NULL };
            MPI_Error_class(kumi_rpim_spawn(&b, 1, NULL, NULL, NULL, 0), &cls);
            if (cls != MPI_ERR_ARG) KT_FAIL("request over 64 KiB: class %d", cls);
            /* errcodes and child_jobid may be NULL */
            char *ok[] = { "child", "nulls", NULL };
            struct kumi_spawn_cmd g = { self, ok, 1, 0, NULL, NULL };
            int rc = kumi_rpim_spawn(&g, 1, child_env, NULL, NULL, 0);
            if (rc != MPI_SUCCESS) KT_FAIL("NULL errcodes and job id: %d", rc);
            printf("parent: bad arguments refused\n");
        } else {
            KT_FAIL("unknown mode %s", mode);
        }
    }
    /* the parent job goes on */
    int sum = 0;
    KT_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (sum != size * (size - 1) / 2) KT_FAIL("parent allreduce %d", sum);
    printf("parent %d: goes on ok\n", rank);
    fflush(stdout);
    const char *wait = getenv("SPAWN_PARENT_WAIT");   /* seconds the parent stays (then a last line) */
    if (wait && atoi(wait) > 0) {
        sleep((unsigned)atoi(wait));
        printf("parent %d: finished after the wait\n", rank);
    }
    KT_MPI(MPI_Finalize());
    return 0;
}
