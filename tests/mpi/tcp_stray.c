/* tcp_stray: connections to a rank's TCP port that do not come from the job
 * (garbage, a connect-and-close, a burst of bytes) are dropped by p2p/tcp,
 * and the job's own traffic goes on unharmed.  Run with 2 ranks and
 * MPI_COMPONENTS=p2p=self,tcp (rank 0's only IPv4 listener is p2p/tcp's). */
#include "kt.h"
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Port of this process's one listening IPv4 TCP socket (0 if not exactly one). */
static int my_listen_port(void)
{
    char inodes[64][32];
    int ninodes = 0, port = 0, found = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    FILE *f;
    char line[512];
    while (d && (e = readdir(d)) != NULL && ninodes < 64) {
        char path[300], target[64];
        ssize_t n;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        n = readlink(path, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (sscanf(target, "socket:[%31[0-9]]", inodes[ninodes]) == 1) ninodes++;
    }
    if (d) closedir(d);
    f = fopen("/proc/net/tcp", "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned a, p, st;
        char inode[32];
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*d %*d %31s", &a, &p, &st, inode) != 4)
            continue;
        if (st != 0x0A) continue;              /* LISTEN */
        for (int i = 0; i < ninodes; i++)
            if (strcmp(inodes[i], inode) == 0) { port = (int)p; found++; }
    }
    fclose(f);
    return found == 1 ? port : 0;
}

static int stray_connect(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    KT_CHECK(fd >= 0, "socket");
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    KT_CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect to port %d: %s", port, strerror(errno));
    return fd;
}

int main(int argc, char **argv)
{
    int rank, size, port = 0;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_CHECK(size == 2, "run with 2 ranks");
    if (rank == 0) {
        port = my_listen_port();
        KT_CHECK(port > 0, "could not find the one TCP listener of rank 0");
    }
    KT_MPI(MPI_Bcast(&port, 1, MPI_INT, 0, MPI_COMM_WORLD));

    int fa = -1;
    if (rank == 1) {
        char junk[4096];
        for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i * 131 + 7);
        /* (a) 16 bytes of garbage where the hello should be, kept open */
        fa = stray_connect(port);
        KT_CHECK(write(fa, junk, 16) == 16, "write");
        /* (b) a burst of garbage, then close */
        int fb = stray_connect(port);
        KT_CHECK(write(fb, junk, sizeof junk) == (ssize_t)sizeof junk, "write");
        close(fb);
        /* (c) connect and close at once */
        close(stray_connect(port));
        /* (d) a few bytes, half a hello, kept open for now */
        int fd4 = stray_connect(port);
        KT_CHECK(write(fd4, "KUMT", 4) == 4, "write");
        close(fd4);
    }

    /* exchange messages until rank 0 has dropped connection (a) */
    double t0 = kt_now();
    int it = 0, stop = 0;
    while (!stop) {
        int out[3], in[3];
        out[0] = rank; out[1] = it; out[2] = 0;
        if (rank == 1) {
            struct pollfd p = { .fd = fa, .events = POLLIN, .revents = 0 };
            if (poll(&p, 1, 0) == 1) {
                char c;
                ssize_t n = read(fa, &c, 1);
                KT_CHECK(n <= 0, "rank 0 answered the stray connection with data");
                out[2] = 1;
            } else if (kt_now() - t0 > 20) {
                KT_FAIL("rank 0 did not drop a stray connection within 20 s");
            }
        }
        KT_MPI(MPI_Sendrecv(out, 3, MPI_INT, 1 - rank, 7, in, 3, MPI_INT, 1 - rank, 7,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        KT_EQ_INT(in[0], 1 - rank);
        KT_EQ_INT(in[1], it);
        stop = rank == 1 ? out[2] : in[2];
        it++;
        if (!stop && it % 64 == 0) usleep(1000);
    }
    if (fa >= 0) close(fa);

    /* the job's traffic is intact: a large message both ways */
    {
        size_t n = 1 << 20;
        unsigned char *s = malloc(n), *r = malloc(n);
        for (size_t i = 0; i < n; i++) s[i] = (unsigned char)(i * 7 + rank);
        KT_MPI(MPI_Sendrecv(s, (int)n, MPI_BYTE, 1 - rank, 8, r, (int)n, MPI_BYTE, 1 - rank, 8,
                            MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (size_t i = 0; i < n; i++)
            if (r[i] != (unsigned char)(i * 7 + 1 - rank)) KT_FAIL("byte %zu wrong", i);
        free(s); free(r);
    }
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("tcp_stray: ok (%d rounds)\n", it);
    return 0;
}
