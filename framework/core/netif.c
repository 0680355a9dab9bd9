/* Network interfaces: which addresses a job uses, and addresses as text
 * (kumi/netif.h says what each function does).  No state, no dependency on
 * the rest of libmpi: mpiexec calls these too. */
#define _GNU_SOURCE
#include <kumi/netif.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

socklen_t kumi_netif_salen(const struct sockaddr *sa)
{
    if (!sa) return 0;
    if (sa->sa_family == AF_INET) return sizeof(struct sockaddr_in);
    if (sa->sa_family == AF_INET6) return sizeof(struct sockaddr_in6);
    return 0;
}

static int prefix_of(const struct sockaddr *mask)
{
    const unsigned char *b;
    int n, bits = 0;
    if (!mask) return -1;
    if (mask->sa_family == AF_INET) {
        b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
        n = 4;
    } else if (mask->sa_family == AF_INET6) {
        b = (const unsigned char *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
        n = 16;
    } else {
        return -1;
    }
    for (int i = 0; i < n; i++)
        for (int k = 7; k >= 0; k--) {
            if (!(b[i] & (1u << k))) return bits;
            bits++;
        }
    return bits;
}

int kumi_netif_is_loopback(const struct sockaddr *sa)
{
    if (!sa) return 0;
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(a)) return a->s6_addr[12] == 127;
    }
    return 0;
}

int kumi_netif_loopback_cc(int fd, const struct sockaddr *sa, const char *cc)
{
    if (!cc || !*cc || !kumi_netif_is_loopback(sa)) return 0;
    return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) == 0 ? 0 : -1;
}

static int linklocal6(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 &&
           IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* the address bytes of sa (4 or 16), or NULL */
static const unsigned char *addr_bytes(const struct sockaddr *sa, int *nbytes)
{
    if (sa->sa_family == AF_INET) {
        *nbytes = 4;
        return (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
    }
    if (sa->sa_family == AF_INET6) {
        *nbytes = 16;
        return (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    }
    return NULL;
}

/* the first bits bits of a and b agree */
static int prefix_equal(const unsigned char *a, const unsigned char *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)whole) != 0) return 0;
    if (rest) {
        unsigned char m = (unsigned char)(0xffu << (8 - rest));
        if ((a[whole] & m) != (b[whole] & m)) return 0;
    }
    return 1;
}

int kumi_netif_same_subnet(const struct kumi_netif *f, const struct sockaddr *sa)
{
    const unsigned char *a, *b;
    int na, nb;
    if (!f || !sa || f->addr.sa.sa_family != sa->sa_family) return 0;
    a = addr_bytes(&f->addr.sa, &na);
    b = addr_bytes(sa, &nb);
    if (!a || !b || na != nb || f->prefix < 0 || f->prefix > na * 8) return 0;
    return prefix_equal(a, b, f->prefix);
}

int kumi_netif_scan(struct kumi_netif *out, int max)
{
    struct ifaddrs *ifa0 = NULL, *ifa;
    int n = 0;
    if (getifaddrs(&ifa0) != 0) return 0;
    for (ifa = ifa0; ifa && n < max; ifa = ifa->ifa_next) {
        struct kumi_netif *f = &out[n];
        int fam;
        if (!ifa->ifa_addr) continue;
        fam = ifa->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6) continue;
        memset(f, 0, sizeof *f);
        snprintf(f->name, sizeof f->name, "%s", ifa->ifa_name ? ifa->ifa_name : "");
        f->family = fam;
        memcpy(&f->addr, ifa->ifa_addr, kumi_netif_salen(ifa->ifa_addr));
        if (fam == AF_INET) f->addr.in4.sin_port = 0;
        else f->addr.in6.sin6_port = 0;
        f->prefix = prefix_of(ifa->ifa_netmask);
        if (f->prefix < 0) f->prefix = fam == AF_INET ? 32 : 128;
        f->up = (ifa->ifa_flags & IFF_UP) != 0;
        f->loopback = (ifa->ifa_flags & IFF_LOOPBACK) || kumi_netif_is_loopback(ifa->ifa_addr);
        n++;
    }
    freeifaddrs(ifa0);
    return n;
}

/* ------------------------------------------------------------------ */
/* include / exclude lists */

static void seterr(char *err, size_t errlen, const char *fmt, const char *item, size_t len)
{
    if (err && errlen) snprintf(err, errlen, fmt, (int)len, item);
}

/* One item (not NUL-terminated, blanks trimmed) against f: 1, 0, -1 bad. */
static int match_item(const struct kumi_netif *f, const char *s, size_t len, char *err, size_t errlen)
{
    char buf[128], *slash;
    struct sockaddr_storage ss;
    int bits = -1, nbytes = 0, fb = 0;
    const unsigned char *a, *b;
    if (len >= sizeof buf) {
        seterr(err, errlen, "interface list item \"%.*s\" is too long", s, len);
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    slash = strchr(buf, '/');
    if (slash) {
        char *end;
        long v;
        *slash = 0;
        v = strtol(slash + 1, &end, 10);
        if (!slash[1] || *end || v < 0 || v > 128) {
            seterr(err, errlen, "interface list item \"%.*s\": bad prefix length", s, len);
            return -1;
        }
        bits = (int)v;
    }
    if (kumi_netif_parse(buf, &ss, NULL, 1) != 0) {
        /* not an address: an interface name (with an optional trailing '*') */
        if (slash) {
            seterr(err, errlen, "interface list item \"%.*s\" is not a subnet (address/bits)", s, len);
            return -1;
        }
        if (buf[len - 1] == '*') return strncmp(f->name, buf, len - 1) == 0;
        return strcmp(f->name, buf) == 0;
    }
    /* an address or a subnet */
    b = addr_bytes((struct sockaddr *)&ss, &nbytes);
    if (bits < 0) bits = nbytes * 8;
    if (bits > nbytes * 8) {
        seterr(err, errlen, "interface list item \"%.*s\": prefix longer than the address", s, len);
        return -1;
    }
    a = addr_bytes(&f->addr.sa, &fb);
    if (!a || fb != nbytes || f->addr.sa.sa_family != ss.ss_family) return 0;
    return prefix_equal(a, b, bits);
}

/* Walk the items of list; with f == NULL only check them. */
static int match_list(const struct kumi_netif *f, const char *list, char *err, size_t errlen)
{
    const char *s = list;
    int hit = 0;
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        const char *t = s;
        while (len && isspace((unsigned char)*t)) { t++; len--; }
        while (len && isspace((unsigned char)t[len - 1])) len--;
        if (len) {
            static const struct kumi_netif none;   /* checks the item's form */
            int r = match_item(f ? f : &none, t, len, err, errlen);
            if (r < 0) return -1;
            if (r && f) hit = 1;
        }
        if (!e) break;
        s = e + 1;
    }
    return hit;
}

int kumi_netif_match(const struct kumi_netif *f, const char *list, char *err, size_t errlen)
{
    return match_list(f, list, err, errlen);
}

int kumi_netif_check_list(const char *list, char *err, size_t errlen)
{
    return match_list(NULL, list, err, errlen) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* choice */

int kumi_netif_select(const struct kumi_netif *in, int n, struct kumi_netif *out, int max,
                      const char *include, const char *exclude, int flags,
                      char *err, size_t errlen)
{
    int nout = 0, anylo = 0, fam_first, fam_second;
    char e2[256];
    if (err && errlen) err[0] = 0;
    if (kumi_netif_check_list(include, e2, sizeof e2) != 0) {
        if (err && errlen) snprintf(err, errlen, "include list: %s", e2);
        return -1;
    }
    if (kumi_netif_check_list(exclude, e2, sizeof e2) != 0) {
        if (err && errlen) snprintf(err, errlen, "exclude list: %s", e2);
        return -1;
    }
    if (!(flags & (KUMI_NETIF_V4 | KUMI_NETIF_V6))) flags |= KUMI_NETIF_V4 | KUMI_NETIF_V6;
    fam_first = (flags & KUMI_NETIF_PREFER6) ? AF_INET6 : AF_INET;
    fam_second = fam_first == AF_INET ? AF_INET6 : AF_INET;

    /* which are allowed at all */
    char *ok = calloc(n > 0 ? (size_t)n : 1, 1);
    if (!ok) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const struct kumi_netif *f = &in[i];
        int fam = f->addr.sa.sa_family;
        if (fam == AF_INET && !(flags & KUMI_NETIF_V4)) continue;
        if (fam == AF_INET6 && !(flags & KUMI_NETIF_V6)) continue;
        if (fam != AF_INET && fam != AF_INET6) continue;
        if (!f->up || linklocal6(&f->addr.sa)) continue;
        if (include && *include && match_list(f, include, NULL, 0) != 1) continue;
        if (exclude && *exclude && match_list(f, exclude, NULL, 0) == 1) continue;
        ok[i] = 1;
        anylo |= f->loopback;
    }
    /* passes: non-loopback (first family, second), then loopback (same) */
    for (int pass = 0; pass < 4; pass++) {
        int lo = pass >= 2, fam = (pass % 2) == 0 ? fam_first : fam_second;
        if (!lo && (flags & KUMI_NETIF_ONEHOST) && anylo) continue;
        if (lo && !(flags & (KUMI_NETIF_ONEHOST | KUMI_NETIF_KEEP_LO))) continue;
        for (int i = 0; i < n && nout < max; i++) {
            if (!ok[i] || !in[i].loopback != !lo || in[i].addr.sa.sa_family != fam) continue;
            /* the same address twice (an alias): once */
            int dup = 0;
            for (int k = 0; k < nout && !dup; k++)
                dup = out[k].addr.sa.sa_family == fam &&
                      memcmp(&out[k].addr, &in[i].addr, kumi_netif_salen(&in[i].addr.sa)) == 0;
            if (!dup) out[nout++] = in[i];
        }
    }
    free(ok);
    return nout;
}

int kumi_netif_choose(struct kumi_netif *out, int max, const char *include,
                      const char *exclude, int flags, char *err, size_t errlen)
{
    struct kumi_netif all[KUMI_NETIF_MAX * 2];
    int n = kumi_netif_scan(all, KUMI_NETIF_MAX * 2);
    return kumi_netif_select(all, n, out, max, include, exclude, flags, err, errlen);
}

/* ------------------------------------------------------------------ */
/* text */

const char *kumi_netif_format(const struct sockaddr *sa, int with_port, char *buf, size_t len)
{
    char ip[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
    if (!buf || !len) return buf;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
        if (with_port) snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(s4->sin_port));
        else snprintf(buf, len, "%s", ip);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, ip, INET6_ADDRSTRLEN);
        if (s6->sin6_scope_id && IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) {
            char ifn[IF_NAMESIZE];
            size_t l = strlen(ip);
            if (if_indextoname(s6->sin6_scope_id, ifn))
                snprintf(ip + l, sizeof ip - l, "%%%s", ifn);
            else
                snprintf(ip + l, sizeof ip - l, "%%%u", (unsigned)s6->sin6_scope_id);
        }
        if (with_port) snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(s6->sin6_port));
        else snprintf(buf, len, "%s", ip);
    } else {
        snprintf(buf, len, "?");
    }
    return buf;
}

static int parse_port(const char *s, unsigned *port)
{
    char *end;
    unsigned long v;
    if (!*s || !isdigit((unsigned char)*s)) return -1;
    v = strtoul(s, &end, 10);
    if (*end || v > 65535) return -1;
    *port = (unsigned)v;
    return 0;
}

static int parse_v6(const char *s, size_t len, struct sockaddr_in6 *s6)
{
    char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], *pct;
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    pct = strchr(buf, '%');
    if (pct) {
        char *end;
        unsigned long idx;
        *pct++ = 0;
        if (!*pct) return -1;
        idx = strtoul(pct, &end, 10);
        if (*end) idx = if_nametoindex(pct);
        if (!idx) return -1;
        s6->sin6_scope_id = (uint32_t)idx;
    }
    return inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1 ? 0 : -1;
}

int kumi_netif_parse(const char *text, struct sockaddr_storage *ss, socklen_t *salen, int port_optional)
{
    unsigned port = 0;
    const char *colon;
    if (!text || !ss) return -1;
    memset(ss, 0, sizeof *ss);
    if (text[0] == '[') {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        const char *close = strchr(text, ']');
        if (!close) return -1;
        if (close[1] == ':') {
            if (parse_port(close + 2, &port) != 0) return -1;
        } else if (close[1] || !port_optional) {
            return -1;
        }
        if (parse_v6(text + 1, (size_t)(close - text - 1), s6) != 0) return -1;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        if (salen) *salen = sizeof *s6;
        return 0;
    }
    colon = strchr(text, ':');
    if (colon && strchr(colon + 1, ':')) {            /* bare IPv6: no port */
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        if (!port_optional || parse_v6(text, strlen(text), s6) != 0) return -1;
        s6->sin6_family = AF_INET6;
        if (salen) *salen = sizeof *s6;
        return 0;
    }
    {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        char buf[INET_ADDRSTRLEN];
        size_t len = colon ? (size_t)(colon - text) : strlen(text);
        if (colon) {
            if (parse_port(colon + 1, &port) != 0) return -1;
        } else if (!port_optional) {
            return -1;
        }
        if (len == 0 || len >= sizeof buf) return -1;
        memcpy(buf, text, len);
        buf[len] = 0;
        if (inet_pton(AF_INET, buf, &s4->sin_addr) != 1) return -1;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        if (salen) *salen = sizeof *s4;
        return 0;
    }
}
