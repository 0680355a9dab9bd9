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
 * errors go to the handler of MPI_COMM_SELF (kumi_err_handle(NULL, ...)). */
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

int kumi_mpi_open_port(MPI_Info info, char *port_name)
{
    return kumi_err_handle(NULL, do_open_port(info, port_name));
}

int kumi_mpi_close_port(const char *port_name)
{
    return kumi_err_handle(NULL, do_close_port(port_name));
}
