/* Dynamic processes, ports: MPI_Open_port, MPI_Close_port (MPI-4.1 sec.
 * 11.4.2).
 *
 * A port is a TCP listener of the process that opened it, on every address
 * of the host (bound to the wildcard address, an ephemeral port); its name is
 *   "kumi:tcp:<address>:<port>:<token>"
 * where <address> is the host's first non-loopback IPv4 address (else
 * 127.0.0.1) and <token> 16 random hex digits that make names unique, so a
 * name closed and a port opened later on the same TCP port do not match.
 * The listener stays open (and its name valid) until MPI_Close_port or the
 * process's end.  Closing a name this process did not open is MPI_ERR_PORT.
 * The info argument carries no key Kumi uses.  No communicator is involved:
 * errors go to the handler of MPI_COMM_SELF (kumi_err_handle(NULL, ...)).
 *
 * Connections through a port (for MPI_Comm_accept / connect, whose roots
 * talk over them): the connecting side sends "KUMIPORT" and the name's 16
 * hex digits of token; the side that opened the port checks them (a
 * connection whose first 24 bytes are not that, or that does not send them
 * within KUMI_DPM_GREET_S seconds, is closed and the next one accepted) and
 * answers "KUMIPOK!".  Then either side sends blobs: a 4-byte length in
 * network order and that many bytes (at most KUMI_DPM_BLOB_MAX). */
#define _GNU_SOURCE
#include "mpi/mpi_front.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

struct port {
    struct port *next;
    int fd;
    char name[MPI_MAX_PORT_NAME];
};
static struct port *ports;

static void host_ipv4(char *buf, size_t len)
{
    snprintf(buf, len, "127.0.0.1");
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) != 0) return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;
        if ((ntohl(sin->sin_addr.s_addr) >> 24) == 127) continue;
        inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len);
        break;
    }
    freeifaddrs(ifs);
}

static int do_open_port(MPI_Info info, char *port_name)
{
    static const char fn[] = "MPI_Open_port";
    if (info != MPI_INFO_NULL && !kumi_info_get(info))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    if (!port_name) return kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
    struct port *p = calloc(1, sizeof *p);
    if (!p) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY), .sin_port = 0 };
    socklen_t sl = sizeof sa;
    if (p->fd < 0 || bind(p->fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(p->fd, 64) != 0 ||
        getsockname(p->fd, (struct sockaddr *)&sa, &sl) != 0) {
        int e = errno;
        if (p->fd >= 0) close(p->fd);
        free(p);
        return kumi_error(MPI_ERR_PORT, "%s: cannot open a TCP listener: %s", fn, strerror(e));
    }
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        unsigned long long x = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20) ^
                               (unsigned long long)(uintptr_t)p;
        memcpy(r, &x, sizeof r);
    }
    char ip[64];
    host_ipv4(ip, sizeof ip);
    snprintf(p->name, sizeof p->name, "kumi:tcp:%s:%u:%02x%02x%02x%02x%02x%02x%02x%02x", ip,
             (unsigned)ntohs(sa.sin_port), r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    p->next = ports;
    ports = p;
    memcpy(port_name, p->name, strlen(p->name) + 1);
    return MPI_SUCCESS;
}

static int do_close_port(const char *port_name)
{
    static const char fn[] = "MPI_Close_port";
    if (!port_name) return kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
    for (struct port **pp = &ports; *pp; pp = &(*pp)->next)
        if (!strncmp((*pp)->name, port_name, MPI_MAX_PORT_NAME)) {
            struct port *p = *pp;
            *pp = p->next;
            close(p->fd);
            free(p);
            return MPI_SUCCESS;
        }
    return kumi_error(MPI_ERR_PORT, "%s: argument port_name (\"%.*s\") is not a port this process opened", fn,
                      200, port_name);
}

/* Without the error handler (MPI_Comm_spawn's glue): port_name has
 * MPI_MAX_PORT_NAME bytes. */
int kumi_dpm_open_port(char *port_name)
{
    return do_open_port(MPI_INFO_NULL, port_name);
}

int kumi_dpm_close_port(const char *port_name)
{
    return do_close_port(port_name);
}

int kumi_mpi_open_port(MPI_Info info, char *port_name)
{
    return kumi_err_handle(NULL, do_open_port(info, port_name));
}

int kumi_mpi_close_port(const char *port_name)
{
    return kumi_err_handle(NULL, do_close_port(port_name));
}

/* ------------------------------------------------------------ connections */
#define KUMI_DPM_GREET_S 10.0
#define KUMI_DPM_BLOB_MAX (64u << 20)
static const char greet_magic[8] = { 'K', 'U', 'M', 'I', 'P', 'O', 'R', 'T' };
static const char greet_ok[8] = { 'K', 'U', 'M', 'I', 'P', 'O', 'K', '!' };

/* Wait until fd is ready for ev or the deadline (kumi_time(); < 0: none)
 * passes: 1 ready, 0 time out, -1 error.  The wait (e.g. an accept that
 * waits for its connect) neither holds the library lock nor stops this
 * process's progress: it sleeps in slices of KUMI_DPM_SLICE_MS without the
 * lock and progresses between them. */
#define KUMI_DPM_SLICE_MS 20
static int wait_fd(int fd, short ev, double deadline)
{
    for (;;) {
        int ms = KUMI_DPM_SLICE_MS;
        if (deadline >= 0) {
            double left = deadline - kumi_time();
            if (left <= 0) return 0;
            if (left * 1000.0 < ms) ms = (int)(left * 1000.0) + 1;
        }
        struct pollfd p = { .fd = fd, .events = ev };
        int d = kumi_lock_release_all();
        int n = poll(&p, 1, ms);
        int e = errno;
        kumi_lock_reacquire(d);
        if (n > 0) return 1;
        if (n < 0 && e != EINTR) {
            errno = e;
            return -1;
        }
        kumi_progress(0);
    }
}

/* All len bytes, before deadline: 0, or -1 (closed, error, time out). */
static int io_all(int fd, void *buf, size_t len, int out, double deadline)
{
    char *b = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = out ? send(fd, b + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(fd, b + done, len - done, MSG_DONTWAIT);
        if (n > 0) { done += (size_t)n; continue; }
        if (n == 0 && !out) return -1;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        if (wait_fd(fd, out ? POLLOUT : POLLIN, deadline) != 1) return -1;
    }
    return 0;
}

/* "kumi:tcp:<ipv4>:<port>:<token>": the address and the token (16 hex
 * digits + NUL); 0, or -1 when the name is not of that form. */
static int parse_name(const char *name, struct sockaddr_in *sa, char token[17])
{
    char buf[MPI_MAX_PORT_NAME];
    if (strnlen(name, sizeof buf) >= sizeof buf || strncmp(name, "kumi:tcp:", 9) != 0) return -1;
    strcpy(buf, name + 9);
    char *t = strrchr(buf, ':');
    if (!t || strlen(t + 1) != 16 || strspn(t + 1, "0123456789abcdef") != 16) return -1;
    *t = 0;
    memcpy(token, t + 1, 17);
    char *pt = strrchr(buf, ':');
    if (!pt) return -1;
    *pt++ = 0;
    char *end;
    unsigned long port = strtoul(pt, &end, 10);
    if (!*pt || *end || port == 0 || port > 65535) return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, buf, &sa->sin_addr) == 1 ? 0 : -1;
}

int kumi_dpm_port_accept(const char *fn, const char *port_name, double timeout, int *fdp)
{
    struct port *p;
    for (p = ports; p && strncmp(p->name, port_name, MPI_MAX_PORT_NAME); p = p->next) ;
    if (!p)
        return kumi_error(MPI_ERR_PORT, "%s: argument port_name (\"%.*s\") is not a port this process opened", fn,
                          200, port_name);
    const char *token = strrchr(p->name, ':') + 1;
    double deadline = timeout < 0 ? -1 : kumi_time() + timeout;
    for (;;) {
        int w = wait_fd(p->fd, POLLIN, deadline);
        if (w == 0) return kumi_error(MPI_ERR_PORT, "%s: timed out: no process connected to port %s within %g s", fn,
                                      p->name, timeout);
        if (w < 0) return kumi_error(MPI_ERR_PORT, "%s: port %s: %s", fn, p->name, strerror(errno));
        int fd = accept4(p->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) continue;
        char g[24];
        double gd = kumi_time() + KUMI_DPM_GREET_S;
        if (deadline >= 0 && deadline < gd) gd = deadline;
        char extra;
        /* (a connection whose side already closed, e.g. a connect that gave up
         * before this accept came, is left out: its greeting is followed by
         * the end of the stream) */
        if (io_all(fd, g, sizeof g, 0, gd) == 0 && !memcmp(g, greet_magic, 8) && !memcmp(g + 8, token, 16) &&
            recv(fd, &extra, 1, MSG_PEEK | MSG_DONTWAIT) != 0 &&
            io_all(fd, (void *)greet_ok, sizeof greet_ok, 1, gd) == 0) {
            *fdp = fd;
            return MPI_SUCCESS;
        }
        kumi_log(1, "%s: port %s: a connection without the port's greeting closed", fn, p->name);
        close(fd);
    }
}

int kumi_dpm_port_connect(const char *fn, const char *port_name, double timeout, int *fdp)
{
    struct sockaddr_in sa;
    char token[17];
    if (parse_name(port_name, &sa, token) != 0)
        return kumi_error(MPI_ERR_PORT, "%s: argument port_name (\"%.*s\") is not a Kumi port name", fn, 200,
                          port_name);
    double deadline = kumi_time() + timeout;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return kumi_error(MPI_ERR_PORT, "%s: socket: %s", fn, strerror(errno));
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc != 0 && errno == EINPROGRESS) {
        int err = 0;
        socklen_t el = sizeof err;
        if (wait_fd(fd, POLLOUT, deadline) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && !err)
            rc = 0;
        else errno = err ? err : ETIMEDOUT;
    }
    char g[24], ok[8];
    memcpy(g, greet_magic, 8);
    memcpy(g + 8, token, 16);
    if (rc != 0) {
        int e = errno;
        close(fd);
        return kumi_error(MPI_ERR_PORT, "%s: cannot connect to port %.*s: %s", fn, 200, port_name, strerror(e));
    }
    if (io_all(fd, g, sizeof g, 1, deadline) != 0 || io_all(fd, ok, sizeof ok, 0, deadline) != 0 ||
        memcmp(ok, greet_ok, sizeof ok) != 0) {
        close(fd);
        if (kumi_time() >= deadline)
            return kumi_error(MPI_ERR_PORT, "%s: timed out: no MPI_Comm_accept answered on port %.*s within %g s", fn,
                              200, port_name, timeout);
        return kumi_error(MPI_ERR_PORT, "%s: port %.*s did not accept the connection (closed, or not open any more)",
                          fn, 200, port_name);
    }
    *fdp = fd;
    return MPI_SUCCESS;
}

int kumi_dpm_send_blob(const char *fn, int fd, const void *buf, size_t len, double timeout)
{
    double deadline = timeout < 0 ? -1 : kumi_time() + timeout;
    uint32_t n = htonl((uint32_t)len);
    if (len > KUMI_DPM_BLOB_MAX) return kumi_error(MPI_ERR_INTERN, "%s: %zu bytes to send over a port", fn, len);
    if (io_all(fd, &n, 4, 1, deadline) != 0 || io_all(fd, (void *)buf, len, 1, deadline) != 0)
        return kumi_error(MPI_ERR_PORT, "%s: the connection through the port was lost", fn);
    return MPI_SUCCESS;
}

/* *buf: malloc'ed (free it), *len bytes. */
int kumi_dpm_recv_blob(const char *fn, int fd, void **buf, size_t *len, double timeout)
{
    double deadline = timeout < 0 ? -1 : kumi_time() + timeout;
    uint32_t n;
    if (io_all(fd, &n, 4, 0, deadline) != 0)
        return kumi_error(MPI_ERR_PORT, "%s: the connection through the port was lost", fn);
    n = ntohl(n);
    if (n > KUMI_DPM_BLOB_MAX)
        return kumi_error(MPI_ERR_PORT, "%s: the peer sent a %u-byte message over the port (more than %u)", fn,
                          (unsigned)n, KUMI_DPM_BLOB_MAX);
    char *b = malloc(n ? n : 1);
    if (!b) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (io_all(fd, b, n, 0, deadline) != 0) {
        free(b);
        return kumi_error(MPI_ERR_PORT, "%s: the connection through the port was lost", fn);
    }
    *buf = b;
    *len = n;
    return MPI_SUCCESS;
}
