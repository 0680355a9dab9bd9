/* conf_dpm_connect: MPI_Comm_accept / MPI_Comm_connect / MPI_Comm_join
 * between separately started jobs (issue 23, dynamic processes).
 *
 *   conf_dpm_connect server DIR   rank 0 opens a port, publishes it (name
 *                                 service, "kumi-connect-<DIR's base>") and
 *                                 writes it to DIR/port; the job accepts on
 *                                 MPI_COMM_WORLD, root 0
 *   conf_dpm_connect client DIR   rank 1 (the last rank of a 1-process job)
 *                                 looks the port up and checks it against
 *                                 DIR/port; the job connects, root that rank
 *   conf_dpm_connect jserver DIR  one process: listens on a TCP socket of its
 *                                 own (127.0.0.1), writes its port number to
 *                                 DIR/jport, accepts and calls MPI_Comm_join
 *   conf_dpm_connect jclient DIR  one process: connects to it, MPI_Comm_join
 * then both sides check the intercommunicator (test_inter, remote size and
 * group), point-to-point both ways (every rank to every remote rank),
 * MPI_Barrier, MPI_Bcast (each side's root to the other side), MPI_Allreduce
 * and MPI_Allgather on it, an MPI_Comm_dup and _idup of it, MPI_Intercomm_merge
 * (server low: its ranks first; then both with high = 0: the same order on
 * all), collectives, a ring and a window on the merged communicators, a
 * split of the merged one into the two sides joined again by
 * MPI_Intercomm_create, and
 * MPI_Comm_disconnect.
 *
 *   conf_dpm_connect badport      errors with MPI_ERRORS_RETURN: a name that
 *                                 is no port, a closed port, accepting on a
 *                                 port not opened here: MPI_ERR_PORT on every
 *                                 rank, with a message naming port_name
 * With DPM_STRAY=1, local rank 0 also poses as a process of another job
 * (XHELLOs to its own TCP listeners): each connection is closed unanswered,
 * and the traffic between the jobs goes on.
 *
 *   conf_dpm_connect noaccept     rank 0 opens a port nobody accepts on; the
 *                                 job connects with info timeout=2: every
 *                                 rank gets MPI_ERR_PORT after about 2 s (not
 *                                 a hang), the message says it timed out; the
 *                                 same for an accept nobody connects to
 *                                 (timeout=1); timeout=soon: MPI_ERR_INFO
 *   conf_dpm_connect notcp DIR    (server side with p2p/tcp left out) the
 *                                 accept fails with a message that names
 *                                 p2p/tcp; DIR/port is written first so that
 *                                 a client side ("client-fail") fails too */
#include "kt.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

static void wait_file(const char *path)
{
    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) == 0) return;
        usleep(10000);
    }
    KT_FAIL("%s did not appear within 60 s", path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    KT_CHECK(f != NULL, "cannot write %s", tmp);
    fputs(text, f);
    fclose(f);
    KT_CHECK(rename(tmp, final) == 0, "rename %s", final);
}

static void read_file(const char *dir, const char *name, char *buf, int len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    wait_file(path);
    FILE *f = fopen(path, "r");
    KT_CHECK(f && fgets(buf, len, f), "cannot read %s", path);
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
}

static void errmsg(int rc, int cls, const char *word)
{
    int c = -1, len;
    char s[MPI_MAX_ERROR_STRING];
    KT_CHECK(rc != MPI_SUCCESS, "the call succeeded, expected class %d", cls);
    MPI_Error_class(rc, &c);
    MPI_Error_string(rc, s, &len);
    KT_CHECK(c == cls, "class %d (%s), expected %d", c, s, cls);
    KT_CHECK(strstr(s, word) != NULL, "message '%s' does not name '%s'", s, word);
}

static int val(int side, int rank) { return 1000 * (side + 1) + rank; }

/* DPM_STRAY=1: connections to this process's listening TCP sockets that
 * pose as a process of another job (an XHELLO naming a job, rank and key id
 * nobody agreed on) are closed without an answer. */
static void stray_xhellos(int remote_rank)
{
    char inodes[64][32], line[512];
    int ninodes = 0, tried = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && ninodes < 64) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (sscanf(target, "socket:[%31[0-9]]", inodes[ninodes]) == 1) ninodes++;
    }
    if (d) closedir(d);
    FILE *f = fopen("/proc/net/tcp", "r");
    KT_CHECK(f != NULL, "/proc/net/tcp");
    while (fgets(line, sizeof line, f)) {
        unsigned a, p, st;
        char inode[32];
        if (sscanf(line, " %*d: %x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*d %*d %31s", &a, &p, &st, inode) != 4)
            continue;
        int mine = 0;
        for (int i = 0; i < ninodes; i++) mine |= !strcmp(inodes[i], inode);
        if (st != 0x0A || !mine) continue;          /* this process's listeners */
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p), .sin_addr.s_addr = a };
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        KT_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect to my listener %u", p);
        unsigned char xh[40];
        uint32_t magic = 0x4b554d58u;                 /* "KUMX" */
        int32_t r = remote_rank;
        for (int i = 0; i < 40; i++) xh[i] = (unsigned char)(rand() & 0xff);
        memcpy(xh, &magic, 4);
        memcpy(xh + 4, &r, 4);
        KT_CHECK(write(fd, xh, sizeof xh) == (ssize_t)sizeof xh, "write");
        /* the answer comes from this process's progress: wait inside MPI */
        char buf[64];
        ssize_t got = -1;
        for (int i = 0; i < 500 && got < 0; i++) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
            got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (got < 0) usleep(10000);
        }
        KT_CHECK(got == 0, "a stray XHELLO got %zd bytes back (0: closed)", got);
        close(fd);
        tried++;
    }
    fclose(f);
    KT_CHECK(tried > 0, "no listening IPv4 socket found");
}

/* side 0: the accepting side (server, jserver), 1: the other */
static void check_inter(MPI_Comm ic, int side)
{
    int flag = 0, rank, size, rsize;
    KT_MPI(MPI_Comm_test_inter(ic, &flag));
    KT_CHECK(flag, "not an intercommunicator");
    MPI_Comm_rank(ic, &rank);
    MPI_Comm_size(ic, &size);
    MPI_Comm_remote_size(ic, &rsize);
    /* the sizes as the other side reports them */
    int mine[2] = { size, rsize }, other[2] = { -1, -1 };
    if (rank == 0) {
        KT_MPI(MPI_Sendrecv(mine, 2, MPI_INT, 0, 7, other, 2, MPI_INT, 0, 7, ic, MPI_STATUS_IGNORE));
        KT_EQ_INT(other[0], rsize);
        KT_EQ_INT(other[1], size);
    }
    MPI_Group rg;
    int gs;
    KT_MPI(MPI_Comm_remote_group(ic, &rg));
    MPI_Group_size(rg, &gs);
    KT_EQ_INT(gs, rsize);
    MPI_Group_free(&rg);

    /* point-to-point: every rank to every remote rank, both ways */
    int *in = malloc(sizeof(int) * (size_t)rsize);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * 2 * (size_t)rsize);
    int *out = malloc(sizeof(int) * (size_t)rsize);
    for (int j = 0; j < rsize; j++) {
        out[j] = val(side, rank) * 100 + j;
        KT_MPI(MPI_Irecv(&in[j], 1, MPI_INT, j, 11, ic, &rq[j]));
        KT_MPI(MPI_Isend(&out[j], 1, MPI_INT, j, 11, ic, &rq[rsize + j]));
    }
    KT_MPI(MPI_Waitall(2 * rsize, rq, MPI_STATUSES_IGNORE));
    for (int j = 0; j < rsize; j++) KT_EQ_INT(in[j], val(1 - side, j) * 100 + rank);
    if (getenv("DPM_STRAY") && rank == 0) stray_xhellos(0);
    /* a large message (rendezvous) from remote rank 0 to local rank 0 and back */
    if (rank == 0) {
        int n = 1 << 18;
        int *big = malloc(sizeof(int) * (size_t)n), *got = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++) big[i] = i ^ side;
        KT_MPI(MPI_Sendrecv(big, n, MPI_INT, 0, 12, got, n, MPI_INT, 0, 12, ic, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++) KT_CHECK(got[i] == (i ^ (1 - side)), "big[%d] = %d", i, got[i]);
        free(big); free(got);
    }

    /* collectives on the intercommunicator */
    KT_MPI(MPI_Barrier(ic));
    int b = rank == 0 ? 4242 + side : -1;
    for (int root_side = 0; root_side < 2; root_side++) {
        int x = side == root_side ? b : -1;
        int root = side == root_side ? (rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        KT_MPI(MPI_Bcast(&x, 1, MPI_INT, root, ic));
        if (side != root_side) KT_EQ_INT(x, 4242 + root_side);
    }
    int v = val(side, rank), sum = -1, want = 0;
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ic));
    for (int j = 0; j < rsize; j++) want += val(1 - side, j);
    KT_EQ_INT(sum, want);
    KT_MPI(MPI_Allgather(&v, 1, MPI_INT, in, 1, MPI_INT, ic));
    for (int j = 0; j < rsize; j++) KT_EQ_INT(in[j], val(1 - side, j));

    /* a duplicate (its context agreed over both jobs) */
    MPI_Comm dup;
    KT_MPI(MPI_Comm_dup(ic, &dup));
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup));
    KT_EQ_INT(sum, want);
    KT_MPI(MPI_Comm_disconnect(&dup));
    KT_CHECK(dup == MPI_COMM_NULL, "disconnect left the handle");
    MPI_Request rq1;
    KT_MPI(MPI_Comm_idup(ic, &dup, &rq1));
    KT_MPI(MPI_Wait(&rq1, MPI_STATUS_IGNORE));
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup));
    KT_EQ_INT(sum, want);
    KT_MPI(MPI_Comm_free(&dup));

    /* merge: the accepting side low */
    MPI_Comm m;
    KT_MPI(MPI_Intercomm_merge(ic, side, &m));
    int mr, ms;
    MPI_Comm_rank(m, &mr);
    MPI_Comm_size(m, &ms);
    KT_EQ_INT(ms, size + rsize);
    KT_EQ_INT(mr, side == 0 ? rank : rsize + rank);
    int *all = malloc(sizeof(int) * (size_t)ms);
    KT_MPI(MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, m));
    int nlow = side == 0 ? size : rsize;
    for (int i = 0; i < ms; i++) KT_EQ_INT(all[i], i < nlow ? val(0, i) : val(1, i - nlow));
    KT_MPI(MPI_Allreduce(&mr, &sum, 1, MPI_INT, MPI_SUM, m));
    KT_EQ_INT(sum, ms * (ms - 1) / 2);
    int bv = mr == ms - 1 ? 777 : 0;
    KT_MPI(MPI_Bcast(&bv, 1, MPI_INT, ms - 1, m));
    KT_EQ_INT(bv, 777);
    KT_MPI(MPI_Barrier(m));
    int ring = -1;
    KT_MPI(MPI_Sendrecv(&mr, 1, MPI_INT, (mr + 1) % ms, 13, &ring, 1, MPI_INT, (mr + ms - 1) % ms, 13, m,
                        MPI_STATUS_IGNORE));
    KT_EQ_INT(ring, (mr + ms - 1) % ms);
    /* one-sided communication over both jobs: everyone puts its value into
     * the window of the next rank */
    int *wbuf;
    MPI_Win win;
    KT_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, m, &wbuf, &win));
    *wbuf = -1;
    KT_MPI(MPI_Win_fence(0, win));
    KT_MPI(MPI_Put(&mr, 1, MPI_INT, (mr + 1) % ms, 0, 1, MPI_INT, win));
    KT_MPI(MPI_Win_fence(0, win));
    KT_EQ_INT(*wbuf, (mr + ms - 1) % ms);
    int acc = 0;
    KT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    KT_MPI(MPI_Get(&acc, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
    KT_MPI(MPI_Win_unlock(0, win));
    KT_EQ_INT(acc, ms - 1);
    KT_MPI(MPI_Win_free(&win));
    /* the merged communicator split back into the two sides */
    MPI_Comm half;
    KT_MPI(MPI_Comm_split(m, side, mr, &half));
    int hs;
    MPI_Comm_size(half, &hs);
    KT_EQ_INT(hs, size);
    /* ... and joined again by MPI_Intercomm_create over the merged one */
    MPI_Comm ic2;
    KT_MPI(MPI_Intercomm_create(half, 0, m, side == 0 ? nlow : 0, 21, &ic2));
    MPI_Comm_remote_size(ic2, &hs);
    KT_EQ_INT(hs, rsize);
    KT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ic2));
    KT_EQ_INT(sum, want);
    MPI_Comm_free(&ic2);
    MPI_Comm_free(&half);
    KT_MPI(MPI_Comm_free(&m));

    /* merge with the same high on both sides: one order, the same everywhere */
    KT_MPI(MPI_Intercomm_merge(ic, 0, &m));
    MPI_Comm_rank(m, &mr);
    int sides[2] = { side, rank }, *ord = malloc(sizeof(int) * 2 * (size_t)ms);
    KT_MPI(MPI_Allgather(sides, 2, MPI_INT, ord, 2, MPI_INT, m));
    int first = ord[0];
    for (int i = 0; i < ms; i++) {
        int lo = first == 0 ? (side == 0 ? size : rsize) : (side == 1 ? size : rsize);
        KT_EQ_INT(ord[2 * i], i < lo ? first : 1 - first);
        KT_EQ_INT(ord[2 * i + 1], i < lo ? i : i - lo);
    }
    KT_MPI(MPI_Comm_disconnect(&m));
    free(ord); free(all); free(in); free(out); free(rq);

    KT_MPI(MPI_Comm_disconnect(&ic));
    KT_CHECK(ic == MPI_COMM_NULL, "disconnect left the handle");
}

static int listen_local(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0 };
    socklen_t sl = sizeof sa;
    KT_CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 1) == 0 &&
             getsockname(fd, (struct sockaddr *)&sa, &sl) == 0, "cannot listen");
    *port = ntohs(sa.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "badport", *dir = argc > 2 ? argv[2] : ".";
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME], svc[256];
    const char *base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    snprintf(svc, sizeof svc, "kumi-connect-%s", base);
    MPI_Comm ic = MPI_COMM_NULL;

    if (!strcmp(mode, "server")) {
        if (rank == 0) {
            KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            KT_MPI(MPI_Publish_name(svc, MPI_INFO_NULL, port));
            write_file(dir, "port", port);
        }
        KT_MPI(MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic));
        if (rank == 0) {
            KT_MPI(MPI_Unpublish_name(svc, MPI_INFO_NULL, port));
            KT_MPI(MPI_Close_port(port));
        }
        check_inter(ic, 0);
    } else if (!strcmp(mode, "client") || !strcmp(mode, "client-fail")) {
        int root = size > 1 ? 1 : 0;
        if (rank == root) {
            read_file(dir, "port", port, sizeof port);
            if (!strcmp(mode, "client")) {
                KT_MPI(MPI_Lookup_name(svc, MPI_INFO_NULL, found));
                KT_CHECK(!strcmp(found, port), "looked up '%s', the file says '%s'", found, port);
            }
        }
        int rc = MPI_Comm_connect(rank == root ? port : NULL, MPI_INFO_NULL, root, MPI_COMM_WORLD, &ic);
        if (!strcmp(mode, "client-fail")) {
            errmsg(rc, MPI_ERR_OTHER, "p2p/tcp");
        } else {
            KT_MPI(rc);
            check_inter(ic, 1);
        }
    } else if (!strcmp(mode, "notcp")) {
        if (rank == 0) {
            KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            write_file(dir, "port", port);
        }
        int rc = MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic);
        errmsg(rc, MPI_ERR_OTHER, "p2p/tcp");
        if (rank == 0) KT_MPI(MPI_Close_port(port));
    } else if (!strcmp(mode, "jserver") || !strcmp(mode, "jclient")) {
        int fd, p;
        char txt[64];
        if (!strcmp(mode, "jserver")) {
            int lfd = listen_local(&p);
            snprintf(txt, sizeof txt, "%d", p);
            write_file(dir, "jport", txt);
            fd = accept(lfd, NULL, NULL);
            KT_CHECK(fd >= 0, "accept");
            close(lfd);
        } else {
            read_file(dir, "jport", txt, sizeof txt);
            struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                      .sin_port = htons((uint16_t)atoi(txt)) };
            fd = socket(AF_INET, SOCK_STREAM, 0);
            KT_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect");
        }
        KT_MPI(MPI_Comm_join(fd, &ic));
        /* the socket is still the program's: one byte each way */
        char c = 'j', d = 0;
        KT_CHECK(write(fd, &c, 1) == 1 && read(fd, &d, 1) == 1 && d == 'j', "the socket after MPI_Comm_join");
        close(fd);
        check_inter(ic, !strcmp(mode, "jserver") ? 0 : 1);
    } else if (!strcmp(mode, "badport")) {
        errmsg(MPI_Comm_connect("no port at all", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic), MPI_ERR_PORT,
               "port_name");
        errmsg(MPI_Comm_accept("kumi:tcp:127.0.0.1:1:0123456789abcdef", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic),
               MPI_ERR_PORT, "port_name");
        if (rank == 0) {
            KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            KT_MPI(MPI_Close_port(port));
        }
        MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
        errmsg(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic), MPI_ERR_PORT, "port");
        KT_CHECK(ic == MPI_COMM_NULL, "newcomm set on failure");
        /* arguments */
        errmsg(MPI_Comm_connect(port, MPI_INFO_NULL, size, MPI_COMM_WORLD, &ic), MPI_ERR_ROOT, "root");
        errmsg(MPI_Comm_join(-1, &ic), MPI_ERR_ARG, "fd");
        /* the communicator still works */
        int x = rank, s = 0;
        KT_MPI(MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        KT_EQ_INT(s, size * (size - 1) / 2);
    } else if (!strcmp(mode, "noaccept")) {
        if (rank == 0) KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "timeout", "2");
        double t0 = MPI_Wtime();
        errmsg(MPI_Comm_connect(rank == 0 ? port : NULL, info, 0, MPI_COMM_WORLD, &ic), MPI_ERR_PORT,
               "timed out");
        double t = MPI_Wtime() - t0;
        KT_CHECK(t >= 1.5 && t < 30, "the connect gave up after %.1f s, expected about 2", t);
        KT_CHECK(ic == MPI_COMM_NULL, "newcomm set on failure");
        /* and an accept nobody connects to, with a time-out of 1 s */
        MPI_Info_set(info, "timeout", "1");
        t0 = MPI_Wtime();
        errmsg(MPI_Comm_accept(rank == 0 ? port : NULL, info, 0, MPI_COMM_WORLD, &ic), MPI_ERR_PORT, "timed out");
        t = MPI_Wtime() - t0;
        KT_CHECK(t >= 0.5 && t < 30, "the accept gave up after %.1f s, expected about 1", t);
        MPI_Info_set(info, "timeout", "soon");
        errmsg(MPI_Comm_accept(rank == 0 ? port : NULL, info, 0, MPI_COMM_WORLD, &ic), MPI_ERR_INFO, "timeout");
        MPI_Info_free(&info);
        if (rank == 0) KT_MPI(MPI_Close_port(port));
    } else {
        KT_FAIL("unknown mode %s", mode);
    }
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("conf_dpm_connect %s: ok\n", mode);
    return 0;
}
