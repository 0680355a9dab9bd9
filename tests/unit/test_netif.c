/* Unit test of the interface chooser and address text (framework/core/netif.c,
 * kumi/netif.h), in process, on made-up interface lists: include / exclude by
 * name, name prefix, CIDR subnet (IPv4, IPv6) and single address; bad list
 * items; the order (non-loopback first, IPv4 before IPv6 unless PREFER6;
 * loopback only for a one-host job or with KEEP_LO; loopback alone for a
 * one-host job); link-local IPv6 and interfaces that are down left out;
 * same-subnet and loopback tests; formatting and parsing "a.b.c.d:p" and
 * "[v6]:p", bad text refused.  And kumi_netif_scan on this host finds a
 * loopback address. */
#include <kumi/netif.h>
#include <arpa/inet.h>
#include "ut.h"

static struct kumi_netif mk(const char *name, const char *addr, int prefix, int up)
{
    struct kumi_netif f;
    struct sockaddr_storage ss;
    memset(&f, 0, sizeof f);
    snprintf(f.name, sizeof f.name, "%s", name);
    if (kumi_netif_parse(addr, &ss, NULL, 1) != 0) {
        fprintf(stderr, "bad test address %s\n", addr);
        exit(2);
    }
    memcpy(&f.addr, &ss, kumi_netif_salen((struct sockaddr *)&ss));
    f.family = f.addr.sa.sa_family;
    f.prefix = prefix;
    f.up = up;
    f.loopback = kumi_netif_is_loopback(&f.addr.sa);
    return f;
}

/* "name=addr name=addr ..." of a result */
static const char *show(const struct kumi_netif *v, int n)
{
    static char buf[2048];
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        char a[KUMI_NETIF_ADDRSTR];
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s=%s", i ? " " : "", v[i].name,
                                kumi_netif_format(&v[i].addr.sa, 0, a, sizeof a));
    }
    return buf;
}

#define SEL(inc, exc, fl) \
    (n = kumi_netif_select(in, nin, out, KUMI_NETIF_MAX, inc, exc, fl, err, sizeof err), \
     n < 0 ? err : show(out, n))
#define CHECK_STR(got, want) \
    do { const char *g_ = (got), *w_ = (want); ut_checks++; \
         if (strcmp(g_, w_) != 0) ut_fail(__FILE__, __LINE__, "got \"%s\", expected \"%s\"", g_, w_); } while (0)

int main(void)
{
    struct kumi_netif in[16], out[KUMI_NETIF_MAX];
    int nin = 0, n;
    char err[256];
    const int V46 = KUMI_NETIF_V4 | KUMI_NETIF_V6;

    in[nin++] = mk("lo", "127.0.0.1", 8, 1);
    in[nin++] = mk("lo", "::1", 128, 1);
    in[nin++] = mk("eth0", "10.1.2.3", 16, 1);
    in[nin++] = mk("eth0", "fe80::1", 64, 1);          /* link-local: never */
    in[nin++] = mk("eth0", "fd00:1::3", 64, 1);
    in[nin++] = mk("eth1", "192.168.5.7", 24, 1);
    in[nin++] = mk("ib0", "172.16.0.9", 12, 0);        /* down: never */
    in[nin++] = mk("veth3", "10.9.0.1", 24, 1);

    UT_CASE("order");
    CHECK_STR(SEL(NULL, NULL, V46), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1 eth0=fd00:1::3");
    CHECK_STR(SEL("", "", V46 | KUMI_NETIF_KEEP_LO),
              "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1 eth0=fd00:1::3 lo=127.0.0.1 lo=::1");
    CHECK_STR(SEL(NULL, NULL, V46 | KUMI_NETIF_KEEP_LO | KUMI_NETIF_PREFER6),
              "eth0=fd00:1::3 eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1 lo=::1 lo=127.0.0.1");
    CHECK_STR(SEL(NULL, NULL, V46 | KUMI_NETIF_ONEHOST), "lo=127.0.0.1 lo=::1");
    CHECK_STR(SEL(NULL, NULL, KUMI_NETIF_V6 | KUMI_NETIF_ONEHOST), "lo=::1");
    CHECK_STR(SEL(NULL, NULL, KUMI_NETIF_V4), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1");
    CHECK_STR(SEL(NULL, NULL, 0), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1 eth0=fd00:1::3");
    /* one-host job without a loopback chosen: the rest */
    CHECK_STR(SEL(NULL, "lo", V46 | KUMI_NETIF_ONEHOST),
              "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1 eth0=fd00:1::3");

    UT_CASE("include / exclude");
    CHECK_STR(SEL("eth0", NULL, V46), "eth0=10.1.2.3 eth0=fd00:1::3");
    CHECK_STR(SEL(" eth* , veth3 ", NULL, KUMI_NETIF_V4), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1");
    CHECK_STR(SEL("10.0.0.0/8", NULL, V46), "eth0=10.1.2.3 veth3=10.9.0.1");
    CHECK_STR(SEL("10.9.0.0/24", NULL, V46 | KUMI_NETIF_KEEP_LO), "veth3=10.9.0.1");
    CHECK_STR(SEL("10.9.0.0/25,::1", NULL, V46 | KUMI_NETIF_KEEP_LO), "veth3=10.9.0.1 lo=::1");
    CHECK_STR(SEL("10.9.0.128/25", NULL, V46), "");
    CHECK_STR(SEL("fd00::/16", NULL, V46), "eth0=fd00:1::3");
    CHECK_STR(SEL("192.168.5.7", NULL, V46), "eth1=192.168.5.7");
    CHECK_STR(SEL("0.0.0.0/0", NULL, V46), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1");
    CHECK_STR(SEL(NULL, "eth*,10.9.0.0/16", V46 | KUMI_NETIF_KEEP_LO), "lo=127.0.0.1 lo=::1");
    CHECK_STR(SEL(NULL, "::/0", V46), "eth0=10.1.2.3 eth1=192.168.5.7 veth3=10.9.0.1");
    CHECK_STR(SEL("ib0", NULL, V46), "");             /* down */
    CHECK_STR(SEL("eth", NULL, V46), "");             /* a name, not a prefix */

    UT_CASE("bad lists");
    CHECK_INT(kumi_netif_select(in, nin, out, 16, "10.0.0.0/33", NULL, V46, err, sizeof err), -1);
    CHECK_HAS(err, "include list", "10.0.0.0/33");
    CHECK_INT(kumi_netif_select(in, nin, out, 16, NULL, "eth0,fd00::/129", V46, err, sizeof err), -1);
    CHECK_HAS(err, "exclude list", "fd00::/129");
    CHECK_INT(kumi_netif_select(in, nin, out, 16, "eth0/24", NULL, V46, err, sizeof err), -1);
    CHECK_HAS(err, "eth0/24");
    CHECK_INT(kumi_netif_select(in, nin, out, 16, "10.0.0.0/", NULL, V46, err, sizeof err), -1);
    CHECK_INT(kumi_netif_check_list("eth0, 10.0.0.0/8 ,fd00::/8,::1,lo*", err, sizeof err), 0);
    CHECK_INT(kumi_netif_check_list("10.0.0.0/x", err, sizeof err), -1);
    CHECK_INT(kumi_netif_match(&in[2], "eth1,10.1.0.0/16", err, sizeof err), 1);
    CHECK_INT(kumi_netif_match(&in[2], "eth1,10.2.0.0/16", err, sizeof err), 0);
    CHECK_INT(kumi_netif_select(in, nin, out, 2, NULL, NULL, V46, err, sizeof err), 2);  /* max */

    UT_CASE("subnet, loopback");
    {
        struct sockaddr_storage ss;
        kumi_netif_parse("10.1.200.1:5", &ss, NULL, 0);
        CHECK_INT(kumi_netif_same_subnet(&in[2], (struct sockaddr *)&ss), 1);
        CHECK_INT(kumi_netif_same_subnet(&in[5], (struct sockaddr *)&ss), 0);
        kumi_netif_parse("[fd00:1::99]:5", &ss, NULL, 0);
        CHECK_INT(kumi_netif_same_subnet(&in[4], (struct sockaddr *)&ss), 1);
        CHECK_INT(kumi_netif_same_subnet(&in[2], (struct sockaddr *)&ss), 0);
        kumi_netif_parse("[fd00:2::99]:5", &ss, NULL, 0);
        CHECK_INT(kumi_netif_same_subnet(&in[4], (struct sockaddr *)&ss), 0);
        kumi_netif_parse("127.3.4.5", &ss, NULL, 1);
        CHECK_INT(kumi_netif_is_loopback((struct sockaddr *)&ss), 1);
        kumi_netif_parse("::ffff:127.0.0.1", &ss, NULL, 1);
        CHECK_INT(kumi_netif_is_loopback((struct sockaddr *)&ss), 1);
        kumi_netif_parse("::2", &ss, NULL, 1);
        CHECK_INT(kumi_netif_is_loopback((struct sockaddr *)&ss), 0);
        kumi_netif_parse("128.0.0.1", &ss, NULL, 1);
        CHECK_INT(kumi_netif_is_loopback((struct sockaddr *)&ss), 0);
    }

    UT_CASE("text");
    {
        struct sockaddr_storage ss;
        socklen_t len = 0;
        char buf[KUMI_NETIF_ADDRSTR];
        CHECK_INT(kumi_netif_parse("10.0.0.2:40123", &ss, &len, 0), 0);
        CHECK_INT(len, sizeof(struct sockaddr_in));
        CHECK_STR(kumi_netif_format((struct sockaddr *)&ss, 1, buf, sizeof buf), "10.0.0.2:40123");
        CHECK_STR(kumi_netif_format((struct sockaddr *)&ss, 0, buf, sizeof buf), "10.0.0.2");
        CHECK_INT(kumi_netif_parse("[fd00::1:2]:65535", &ss, &len, 0), 0);
        CHECK_INT(len, sizeof(struct sockaddr_in6));
        CHECK_STR(kumi_netif_format((struct sockaddr *)&ss, 1, buf, sizeof buf), "[fd00::1:2]:65535");
        CHECK_STR(kumi_netif_format((struct sockaddr *)&ss, 0, buf, sizeof buf), "fd00::1:2");
        CHECK_INT(kumi_netif_parse("[::1]:1", &ss, NULL, 0), 0);
        CHECK_STR(kumi_netif_format((struct sockaddr *)&ss, 1, buf, sizeof buf), "[::1]:1");
        CHECK_INT(kumi_netif_parse("[::1]", &ss, NULL, 1), 0);
        CHECK_INT(kumi_netif_parse("::1", &ss, NULL, 1), 0);
        CHECK_INT(ss.ss_family, AF_INET6);
        CHECK_INT(kumi_netif_parse("1.2.3.4", &ss, NULL, 1), 0);
        CHECK_INT(((struct sockaddr_in *)&ss)->sin_port, 0);
        /* refused */
        CHECK_INT(kumi_netif_parse("::1", &ss, NULL, 0), -1);          /* no port */
        CHECK_INT(kumi_netif_parse("1.2.3.4", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("[::1]", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("1.2.3.4:65536", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("1.2.3.4:", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("1.2.3.4:-1", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("1.2.3:80", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("[::1:80", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("[::1]x80", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("[nothost]:80", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("host:80", &ss, NULL, 0), -1);
        CHECK_INT(kumi_netif_parse("", &ss, NULL, 1), -1);
        CHECK_INT(kumi_netif_parse(NULL, &ss, NULL, 1), -1);
    }

    UT_CASE("scan");
    {
        struct kumi_netif all[KUMI_NETIF_MAX];
        int na = kumi_netif_scan(all, KUMI_NETIF_MAX), lo = 0;
        for (int i = 0; i < na; i++) lo |= all[i].loopback && all[i].family == AF_INET;
        CHECK(lo, "no IPv4 loopback among the %d addresses of this host", na);
        n = kumi_netif_choose(out, KUMI_NETIF_MAX, "127.0.0.0/8", NULL,
                              KUMI_NETIF_V4 | KUMI_NETIF_ONEHOST, err, sizeof err);
        CHECK(n >= 1 && out[0].loopback, "choose 127/8 on a one-host job: %d: %s", n, n >= 0 ? show(out, n) : err);
    }

    printf("%d checks, %d failed\n", ut_checks, ut_failed);
    return ut_failed ? 1 : 0;
}
