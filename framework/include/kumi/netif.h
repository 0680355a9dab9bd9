/* kumi/netif.h: choosing the network interfaces (addresses) a job uses, and
 * writing / reading socket addresses as text.  One chooser for every user:
 * p2p/tcp (its listeners and the order it tries a peer's addresses in) and
 * mpiexec (the address its control channel listens on).  Exported by libmpi
 * (framework/core/netif.c); mpiexec and the components link libmpi.
 *
 * Typical use:
 *
 *     struct kumi_netif ifs[KUMI_NETIF_MAX];
 *     char err[256];
 *     int n = kumi_netif_choose(ifs, KUMI_NETIF_MAX, include, exclude,
 *                               KUMI_NETIF_V4 | KUMI_NETIF_V6 |
 *                               (one_host ? KUMI_NETIF_ONEHOST : 0),
 *                               err, sizeof err);
 *     if (n < 0) ... err says which item of which list is bad ...
 *     for (i = 0; i < n; i++) bind a socket to ifs[i].addr (port 0) ...
 *
 * Include / exclude lists (the form of Open MPI's btl_tcp_if_include): items
 * separated by commas (blanks around an item are ignored), each one of
 *   - an interface name: "eth0", or a prefix with a trailing '*': "eth*";
 *   - a subnet in CIDR form: "10.1.0.0/16", "fd00::/64" (an address of the
 *     interface must lie in it);
 *   - one address: "10.1.2.3", "::1" (the same as /32, /128).
 * An empty or NULL include list includes everything; an address is kept when
 * it matches the include list and does not match the exclude list.
 *
 * Order of the result: non-loopback addresses first (in the order of
 * getifaddrs, IPv4 before IPv6 unless KUMI_NETIF_PREFER6), loopback ones
 * last.  Loopback addresses are kept only when the job runs on one host
 * (KUMI_NETIF_ONEHOST: then, if any loopback address was chosen, ONLY the
 * loopback addresses are returned) or when the caller asks for them anyway
 * (KUMI_NETIF_KEEP_LO: p2p/tcp publishes them last, for peers that turn out
 * to be on the same host).  IPv6 link-local addresses (fe80::/10) are never
 * returned: they mean nothing without the interface, which differs between
 * hosts.  An interface that is down is never returned.
 *
 * Text form of addresses: "1.2.3.4:5678" and "[fd00::1]:5678" (IPv6 always
 * in brackets when a port follows); kumi_netif_parse() reads both, and also
 * a bare address without a port (port 0) where the caller allows it.
 */
#ifndef KUMI_NETIF_H
#define KUMI_NETIF_H

#include <stddef.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <kumi/kumi.h>

#define KUMI_NETIF_MAX      64   /* plenty for one host */
#define KUMI_NETIF_NAMELEN  32   /* > IFNAMSIZ */
#define KUMI_NETIF_ADDRSTR  64   /* "[" IPv6 "]:65535" and the NUL fit */

/* flags of kumi_netif_select / kumi_netif_choose */
#define KUMI_NETIF_V4       0x01 /* IPv4 addresses wanted */
#define KUMI_NETIF_V6       0x02 /* IPv6 addresses wanted */
#define KUMI_NETIF_ONEHOST  0x04 /* the job is on this host: loopback alone if there is one */
#define KUMI_NETIF_KEEP_LO  0x08 /* keep loopback addresses (last) although the job spans hosts */
#define KUMI_NETIF_PREFER6  0x10 /* IPv6 before IPv4 (within non-loopback, within loopback) */

struct kumi_netif {
    char name[KUMI_NETIF_NAMELEN];   /* interface, e.g. "eth0" */
    int family;                      /* AF_INET or AF_INET6 */
    int prefix;                      /* netmask length in bits */
    int loopback;                    /* a loopback address (127/8, ::1) or interface */
    int up;                          /* IFF_UP (kumi_netif_scan fills it) */
    union {                          /* port 0; sin6_scope_id set for link-local */
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } addr;
};

/* Every address of every interface of this host (IPv4 and IPv6, up or not),
 * in getifaddrs order; at most max.  Returns the count (0 when getifaddrs
 * fails). */
KUMI_EXPORT int kumi_netif_scan(struct kumi_netif *out, int max);

/* The pure part of the choice: from in[0..n) keep the addresses the flags,
 * include and exclude allow, ordered as above, into out (at most max).
 * Returns the count, or -1 with a message in err when a list has a bad item
 * (e.g. "10.0.0.0/33"). */
KUMI_EXPORT int kumi_netif_select(const struct kumi_netif *in, int n, struct kumi_netif *out, int max,
                                  const char *include, const char *exclude, int flags,
                                  char *err, size_t errlen);

/* kumi_netif_scan + kumi_netif_select. */
KUMI_EXPORT int kumi_netif_choose(struct kumi_netif *out, int max, const char *include,
                                  const char *exclude, int flags, char *err, size_t errlen);

/* Does the interface address match one item of list (the form above)?
 * 1 yes, 0 no, -1 a bad item (message in err, which may be NULL). */
KUMI_EXPORT int kumi_netif_match(const struct kumi_netif *f, const char *list, char *err, size_t errlen);

/* Is every item of list well formed?  0 yes, -1 no (message in err). */
KUMI_EXPORT int kumi_netif_check_list(const char *list, char *err, size_t errlen);

/* Is sa (AF_INET / AF_INET6) on the subnet of f (same family, same first
 * f->prefix bits)?  1 / 0. */
KUMI_EXPORT int kumi_netif_same_subnet(const struct kumi_netif *f, const struct sockaddr *sa);

/* Is sa a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.y.z)?  1 / 0. */
KUMI_EXPORT int kumi_netif_is_loopback(const struct sockaddr *sa);

/* A TCP socket fd to sa: where sa is a loopback address and cc is not empty
 * (NULL or ""), its congestion control becomes cc (TCP_CONGESTION; the
 * tcp transport's p2p_tcp_loopback_cc and the io_uring engine's
 * kumi_base_sched_uring_loopback_cc say why).  0: set or nothing to do;
 * -1 (errno): the system refused cc. */
KUMI_EXPORT int kumi_netif_loopback_cc(int fd, const struct sockaddr *sa, const char *cc);

/* sa as text: with_port ? "1.2.3.4:80" / "[::1]:80" : "1.2.3.4" / "::1".
 * Returns buf ("?" for another family). */
KUMI_EXPORT const char *kumi_netif_format(const struct sockaddr *sa, int with_port, char *buf, size_t len);

/* Read "1.2.3.4:80", "[::1]:80" (and "[fe80::1%eth0]:80"); a port is
 * required unless port_optional (then "1.2.3.4", "::1", "[::1]" give port
 * 0).  Returns 0, or -1 for text that is not an address.  *salen (may be
 * NULL) gets the size of the sockaddr. */
KUMI_EXPORT int kumi_netif_parse(const char *text, struct sockaddr_storage *ss, socklen_t *salen,
                                 int port_optional);

/* The size of the sockaddr of sa's family (sizeof sockaddr_in / _in6; 0 else). */
KUMI_EXPORT socklen_t kumi_netif_salen(const struct sockaddr *sa);

#endif
