/* Unit test of the connections through a port (framework/mpi/dpm_port.c,
 * what the roots of MPI_Comm_accept / connect talk over), in process: this
 * process opens a port (MPI_Open_port's implementation) and accepts; a
 * forked child connects.
 *  - a connection with the port's greeting is accepted, blobs go both ways
 *    (an empty one and one of 1 MiB, which is more than a socket buffer);
 *  - connections that do not greet with the port's token are closed (the
 *    connecting side gets MPI_ERR_PORT), raw bytes too, and the acceptor
 *    goes on to accept the next one;
 *  - port names that are not Kumi's, or whose parts are wrong, are
 *    MPI_ERR_PORT naming the argument; accepting on a name this process did
 *    not open is MPI_ERR_PORT; an accept that nobody connects to times out;
 *    connecting to a closed port fails. */
#define _GNU_SOURCE
#include "mpi/mpi_front.h"
#include "ut.h"
#include "ut_errors.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1u << 20)

static int child_fails;
#define CCHECK(cond, what) \
    do { if (!(cond)) { fprintf(stderr, "FAIL child: %s\n", what); child_fails++; } } while (0)

/* A raw connection that sends 24 bytes that are not a greeting. */
static void raw_garbage(const char *name)
{
    const char *p = strrchr(name, ':');
    const char *q = p - 1;
    while (*q != ':') q--;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(q + 1)) };
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        (void)!write(fd, "GET / HTTP/1.0\r\n\r\nxxxxxx", 24);
        char c;
        CCHECK(read(fd, &c, 1) <= 0, "raw bytes got an answer");
    }
    close(fd);
}

static int child(const char *name)
{
    int fd = -1;
    raw_garbage(name);
    char bad[MPI_MAX_PORT_NAME];
    strcpy(bad, name);
    char *t = bad + strlen(bad) - 1;
    *t = *t == '0' ? '1' : '0';                     /* another token */
    int rc = kumi_dpm_port_connect("MPI_Comm_connect", bad, 5.0, &fd);
    CCHECK(cls(rc) == MPI_ERR_PORT, "a wrong token was accepted");
    rc = kumi_dpm_port_connect("MPI_Comm_connect", name, 5.0, &fd);
    CCHECK(rc == MPI_SUCCESS, "the right token was refused");
    if (rc) return 1;
    CCHECK(kumi_dpm_send_blob("t", fd, "hello", 5, 5.0) == MPI_SUCCESS, "send hello");
    CCHECK(kumi_dpm_send_blob("t", fd, "", 0, 5.0) == MPI_SUCCESS, "send empty");
    void *b;
    size_t n;
    CCHECK(kumi_dpm_recv_blob("t", fd, &b, &n, 10.0) == MPI_SUCCESS, "recv big");
    if (b) {
        CCHECK(n == BIG, "big blob length");
        int ok = 1;
        for (size_t i = 0; i < n && ok; i++) ok = ((unsigned char *)b)[i] == (unsigned char)(i * 7);
        CCHECK(ok, "big blob contents");
        free(b);
    }
    close(fd);
    return child_fails ? 1 : 0;
}

static void test_names(void)
{
    UT_CASE("bad port names");
    static const char *bad[] = {
        "foo", "kumi:tcp:127.0.0.1:0:0123456789abcdef", "kumi:tcp:127.0.0.1:70000:0123456789abcdef",
        "kumi:tcp:127.0.0.1:5000:0123", "kumi:tcp:127.0.0.1:5000:0123456789abcdeX", "kumi:tcp:999.0.0.1:5000:0123456789abcdef",
        "kumi:tcp::5000:0123456789abcdef", "kumi:udp:127.0.0.1:5000:0123456789abcdef", "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int fd = -1;
        int rc = kumi_dpm_port_connect("MPI_Comm_connect", bad[i], 1.0, &fd);
        CHECK_INT(cls(rc), MPI_ERR_PORT);
        CHECK(strstr(msg(rc), "port_name") != NULL, "message for \"%s\" names the argument: %s", bad[i], msg(rc));
        CHECK_INT(fd, -1);
    }
    int fd = -1;
    int rc = kumi_dpm_port_accept("MPI_Comm_accept", "kumi:tcp:127.0.0.1:5000:0123456789abcdef", 0.1, &fd);
    CHECK_INT(cls(rc), MPI_ERR_PORT);
    CHECK(strstr(msg(rc), "not a port this process opened") != NULL, "accept on another's port: %s", msg(rc));
}

int main(void)
{
    char name[MPI_MAX_PORT_NAME];
    test_names();

    UT_CASE("accept times out");
    CHECK_INT(kumi_mpi_open_port(MPI_INFO_NULL, name), MPI_SUCCESS);
    int fd = -1;
    double t0 = kumi_time();
    int rc = kumi_dpm_port_accept("MPI_Comm_accept", name, 0.3, &fd);
    CHECK_INT(cls(rc), MPI_ERR_PORT);
    CHECK(kumi_time() - t0 >= 0.25 && kumi_time() - t0 < 5, "timed out after %.2f s", kumi_time() - t0);

    UT_CASE("greeting, blobs both ways");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child(name));
    rc = kumi_dpm_port_accept("MPI_Comm_accept", name, 30.0, &fd);
    CHECK_INT(rc, MPI_SUCCESS);
    if (rc == MPI_SUCCESS) {
        void *b = NULL;
        size_t n = 99;
        CHECK_INT(kumi_dpm_recv_blob("t", fd, &b, &n, 10.0), MPI_SUCCESS);
        CHECK(b && n == 5 && !memcmp(b, "hello", 5), "first blob is \"hello\"");
        free(b);
        b = NULL;
        CHECK_INT(kumi_dpm_recv_blob("t", fd, &b, &n, 10.0), MPI_SUCCESS);
        CHECK_INT(n, 0);
        free(b);
        unsigned char *big = malloc(BIG);
        for (size_t i = 0; i < BIG; i++) big[i] = (unsigned char)(i * 7);
        CHECK_INT(kumi_dpm_send_blob("t", fd, big, BIG, 10.0), MPI_SUCCESS);
        free(big);
        b = NULL;
        rc = kumi_dpm_recv_blob("t", fd, &b, &n, 10.0);      /* the child closes: lost */
        CHECK_INT(cls(rc), MPI_ERR_PORT);
        close(fd);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child's checks failed (status %#x)", st);

    UT_CASE("closed port");
    CHECK_INT(kumi_mpi_close_port(name), MPI_SUCCESS);
    rc = kumi_dpm_port_connect("MPI_Comm_connect", name, 2.0, &fd);
    CHECK_INT(cls(rc), MPI_ERR_PORT);
    return ut_done("test_dpm_port");
}
