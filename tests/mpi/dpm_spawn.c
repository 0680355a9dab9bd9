/* dpm_spawn: MPI_Comm_spawn, MPI_Comm_spawn_multiple, MPI_Comm_get_parent
 * (issue 23 item 2).  Run by mpiexec with 1..4 ranks (the parents); the
 * children are this program again, started by the parents with the
 * argument "child":
 *   1. MPI_Comm_get_parent is MPI_COMM_NULL in the parents;
 *   2. MPI_Comm_spawn of 3 children (root 0; the last parent rank as root
 *      too): error codes all MPI_SUCCESS, an intercommunicator with 3 remote
 *      processes; the children see their own MPI_COMM_WORLD of 3, a parent
 *      intercommunicator whose remote group is the parents, MPI_APPNUM 0,
 *      their argv; point-to-point both ways, MPI_Bcast from a parent and
 *      from a child over the intercommunicator, MPI_Intercomm_merge +
 *      MPI_Allreduce, MPI_Comm_disconnect on both sides (then get_parent is
 *      MPI_COMM_NULL);
 *   3. MPI_Comm_spawn_multiple of 1 + 2 children with different argv: the
 *      children's MPI_APPNUM and argv follow their command, ranks in
 *      command order;
 *   4. a program that does not exist: MPI_ERR_SPAWN (MPI_ERRORS_RETURN), every
 *      error code MPI_ERR_SPAWN, and the parents go on;
 *   5. bad arguments: maxprocs 0 -> MPI_ERR_ARG; count 0 -> MPI_ERR_ARG; info
 *      "timeout" not a number -> MPI_ERR_INFO at every rank (no rank left waiting).
 * With the argument "host=LIST" the two MPI_Comm_spawn calls of 2. pass the
 * info key host=LIST (tests/scripts/launch_hosts_spawn.sh: children on other
 * hosts; the children print where they run). */
#include "kt.h"
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char self[PATH_MAX];

static void child(int argc, char **argv)
{
    MPI_Comm parent;
    KT_MPI(MPI_Comm_get_parent(&parent));
    KT_CHECK(parent != MPI_COMM_NULL, "a spawned process has no parent");
    int rank, size, rsize, psize, flag, *appnum;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_remote_size(parent, &rsize));
    KT_MPI(MPI_Comm_test_inter(parent, &flag));
    KT_CHECK(flag, "the parent communicator is not an intercommunicator");
    KT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag));
    KT_CHECK(flag, "MPI_APPNUM not set in a spawned process");
    const char *mode = argv[2];
    psize = atoi(argv[3]);
    KT_EQ_INT(rsize, psize);
    char hn[256] = "?";
    gethostname(hn, sizeof hn - 1);
    printf("dpm_spawn child %s rank %d of %d on host %s\n", mode, rank, size, hn);
    fflush(stdout);
    if (strcmp(mode, "single") == 0) {
        KT_EQ_INT(size, 3);
        KT_EQ_INT(*appnum, 0);
        KT_EQ_INT(argc, 5);
        KT_CHECK(strcmp(argv[4], "x y") == 0, "argv[4] is '%s', expected 'x y'", argv[4]);
        /* point-to-point: parent 0 sends rank*10 + 1, the child answers with + 1 */
        int v;
        KT_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 7, parent, MPI_STATUS_IGNORE));
        KT_EQ_INT(v, rank * 10 + 1);
        v++;
        KT_MPI(MPI_Send(&v, 1, MPI_INT, 0, 8, parent));
        /* bcast from parent 0, then from child 2 */
        int b = -1;
        KT_MPI(MPI_Bcast(&b, 1, MPI_INT, 0, parent));
        KT_EQ_INT(b, 4242);
        b = 99;
        KT_MPI(MPI_Bcast(&b, 1, MPI_INT, rank == 2 ? MPI_ROOT : MPI_PROC_NULL, parent));
        /* merge: children high */
        MPI_Comm all;
        KT_MPI(MPI_Intercomm_merge(parent, 1, &all));
        int arank, asize, sum = 0, one;
        MPI_Comm_rank(all, &arank);
        MPI_Comm_size(all, &asize);
        KT_EQ_INT(asize, psize + 3);
        KT_EQ_INT(arank, psize + rank);
        one = arank;
        KT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, all));
        KT_EQ_INT(sum, asize * (asize - 1) / 2);
        KT_MPI(MPI_Comm_free(&all));
        KT_MPI(MPI_Comm_disconnect(&parent));
        MPI_Comm again;
        KT_MPI(MPI_Comm_get_parent(&again));
        KT_CHECK(again == MPI_COMM_NULL, "MPI_Comm_get_parent after MPI_Comm_disconnect is not MPI_COMM_NULL");
    } else {                              /* multiple: command 0 has 1 process, command 1 has 2 */
        KT_EQ_INT(size, 3);
        int want_app = rank == 0 ? 0 : 1;
        KT_EQ_INT(*appnum, want_app);
        KT_CHECK(strcmp(argv[4], want_app ? "second" : "first") == 0, "rank %d (appnum %d) got argv[4] '%s'", rank,
                 *appnum, argv[4]);
        int rep[2] = { rank, *appnum };
        if (rank == 0) {
            int all[6];
            MPI_Gather(rep, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
            KT_MPI(MPI_Send(all, 6, MPI_INT, 0, 9, parent));
        } else {
            MPI_Gather(rep, 2, MPI_INT, NULL, 2, MPI_INT, 0, MPI_COMM_WORLD);
        }
        KT_MPI(MPI_Comm_disconnect(&parent));
    }
    MPI_Finalize();
    exit(0);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    if (argc > 1 && strcmp(argv[1], "child") == 0) child(argc, argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    KT_CHECK(l > 0, "readlink /proc/self/exe");
    self[l] = 0;
    char psz[16];
    snprintf(psz, sizeof psz, "%d", size);

    /* 1 */
    MPI_Comm parent;
    KT_MPI(MPI_Comm_get_parent(&parent));
    KT_CHECK(parent == MPI_COMM_NULL, "a process started by mpiexec has a parent");

    /* 2: both as root 0 and as root size-1 */
    MPI_Info hinfo = MPI_INFO_NULL;
    if (argc > 1 && strncmp(argv[1], "host=", 5) == 0) {
        KT_MPI(MPI_Info_create(&hinfo));
        KT_MPI(MPI_Info_set(hinfo, "host", argv[1] + 5));
    }
    for (int round = 0; round < 2; round++) {
        int root = round == 0 ? 0 : size - 1;
        char *cargv[] = { "child", "single", psz, "x y", NULL };
        MPI_Comm inter;
        int errs[3] = { -1, -1, -1 };
        KT_MPI(MPI_Comm_spawn(self, cargv, 3, hinfo, root, MPI_COMM_WORLD, &inter, errs));
        for (int i = 0; i < 3; i++) KT_EQ_INT(errs[i], MPI_SUCCESS);
        int rsize, flag;
        KT_MPI(MPI_Comm_remote_size(inter, &rsize));
        KT_EQ_INT(rsize, 3);
        KT_MPI(MPI_Comm_test_inter(inter, &flag));
        KT_CHECK(flag, "MPI_Comm_spawn did not give an intercommunicator");
        if (rank == 0) {
            for (int c = 0; c < 3; c++) {
                int v = c * 10 + 1;
                KT_MPI(MPI_Send(&v, 1, MPI_INT, c, 7, inter));
            }
            for (int c = 0; c < 3; c++) {
                int v;
                KT_MPI(MPI_Recv(&v, 1, MPI_INT, c, 8, inter, MPI_STATUS_IGNORE));
                KT_EQ_INT(v, c * 10 + 2);
            }
        }
        int b = 4242;
        KT_MPI(MPI_Bcast(&b, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter));
        b = -1;
        KT_MPI(MPI_Bcast(&b, 1, MPI_INT, 2, inter));
        KT_EQ_INT(b, 99);
        MPI_Comm all;
        KT_MPI(MPI_Intercomm_merge(inter, 0, &all));
        int arank, asize, sum = 0, one;
        MPI_Comm_rank(all, &arank);
        MPI_Comm_size(all, &asize);
        KT_EQ_INT(arank, rank);
        KT_EQ_INT(asize, size + 3);
        one = arank;
        KT_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, all));
        KT_EQ_INT(sum, asize * (asize - 1) / 2);
        KT_MPI(MPI_Comm_free(&all));
        KT_MPI(MPI_Comm_disconnect(&inter));
        KT_CHECK(inter == MPI_COMM_NULL, "MPI_Comm_disconnect did not set the handle to MPI_COMM_NULL");
    }

    if (hinfo != MPI_INFO_NULL) MPI_Info_free(&hinfo);

    /* 3: spawn_multiple, 1 + 2 */
    {
        char *cmds[2] = { self, self };
        char *a0[] = { "child", "multiple", psz, "first", NULL }, *a1[] = { "child", "multiple", psz, "second", NULL };
        char **argvs[2] = { a0, a1 };
        int np[2] = { 1, 2 };
        MPI_Info infos[2] = { MPI_INFO_NULL, MPI_INFO_NULL };
        MPI_Comm inter;
        int errs[3];
        KT_MPI(MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &inter, errs));
        for (int i = 0; i < 3; i++) KT_EQ_INT(errs[i], MPI_SUCCESS);
        if (rank == 0) {
            int all[6];
            KT_MPI(MPI_Recv(all, 6, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
            static const int want[] = { 0, 0, 1, 1, 2, 1 };
            for (int i = 0; i < 6; i++) KT_EQ_INT(all[i], want[i]);
        }
        KT_MPI(MPI_Comm_disconnect(&inter));
    }

    /* 4: a program that does not exist */
    {
        MPI_Comm inter = MPI_COMM_WORLD;
        int errs[2] = { 0, 0 };
        KT_ERRCLASS(MPI_Comm_spawn("/nonexistent/kumi-no-such-program", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                                   MPI_COMM_WORLD, &inter, errs),
                    MPI_ERR_SPAWN);
        KT_EQ_INT(errs[0], MPI_ERR_SPAWN);
        KT_EQ_INT(errs[1], MPI_ERR_SPAWN);
        KT_CHECK(inter == MPI_COMM_NULL, "a failed spawn left intercomm set");
    }

    /* 5: bad arguments (all ranks: the root's verdict reaches everyone) */
    {
        MPI_Comm inter;
        KT_ERRCLASS(MPI_Comm_spawn(self, MPI_ARGV_NULL, 0, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                                   MPI_ERRCODES_IGNORE),
                    MPI_ERR_ARG);
        /* a bad "timeout" found at the root after counting the children:
         * every process returns MPI_ERR_INFO, none waits for error codes */
        MPI_Info bad;
        KT_MPI(MPI_Info_create(&bad));
        KT_MPI(MPI_Info_set(bad, "timeout", "soon"));
        int errs[2] = { 0, 0 };
        KT_ERRCLASS(MPI_Comm_spawn(self, MPI_ARGV_NULL, 2, bad, 0, MPI_COMM_WORLD, &inter, errs), MPI_ERR_INFO);
        KT_EQ_INT(errs[0], MPI_ERR_SPAWN);
        MPI_Info_free(&bad);
        char *cmds[1] = { self };
        int np[1] = { 1 };
        KT_ERRCLASS(MPI_Comm_spawn_multiple(0, cmds, MPI_ARGVS_NULL, np, NULL, 0, MPI_COMM_WORLD, &inter,
                                            MPI_ERRCODES_IGNORE),
                    MPI_ERR_ARG);
    }

    KT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Finalize();
    if (rank == 0) printf("dpm_spawn: ok\n");
    return 0;
}
