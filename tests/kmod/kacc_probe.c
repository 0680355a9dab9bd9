/* The KACC module without Kumi (run inside the test VM by tests/kmod/vm-init.sh):
 *   selftest  a schedule over a loopback TCP pair: SEND -> RECV, then CALC (int sum, double
 *             sum) and COPY in the kernel, a node done by the process (USER_PRE), run twice
 *             (persistent) with new data; values and completion checked; then a RUNPIN
 *             registration (nothing pinned until START, unpinned at the run's end; a buffer
 *             mapped anew at the same address between runs gets the data; a buffer gone
 *             fails START with EFAULT) and START_TAG (the offset is on the wire: a message
 *             sent with tag 5 + 100000 is received by a RECV of tag 100005 started with 0)
 *   fuzz      bad input through every ioctl and random node arrays: each must be refused
 *             (or run harmlessly); the self-test passes afterwards
 *   hang      a schedule whose receive never comes, left running (the script kills the
 *             process: the module must free everything, and refuse rmmod meanwhile)
 *   direct    two contexts of one kernel linked for direct copies (kacc_direct.c): a wrong
 *             secret, an unknown id and a second link refused; int / byte messages copied
 *             from one context's pinned pages into the other's, bit for bit, with the
 *             receive posted before and after the send, a CALC on the received data, a
 *             truncated message; a RECV into scratch reduced straight from the sender's
 *             pages (KACC_F_SCRATCH: the scratch left unwritten) and one that may not be (its
 *             buffer read by another node); a RECV into the inout of the CALC after it
 *             (out = in op received: fused into the inout, no flag); the module's direct
 *             counters; the receiver closed while
 *             a send waits (the send fails, nothing stays pinned)
 * Prints "PASS name" / "FAIL name ..." lines. */
#define _GNU_SOURCE
#include "../../kmod/kumi_kacc_uapi.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#define AREA (1u << 20)
static int dev, fails;
static char *area;

static void verdict(int ok, const char *name, const char *detail)
{
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, detail ? " " : "", detail ? detail : "");
    fflush(stdout);
    if (!ok) fails++;
}

static void open_dev(void)
{
    dev = open(KACC_DEVICE, O_RDWR);
    if (dev < 0) { perror(KACC_DEVICE); exit(1); }
    struct kacc_version v;
    if (ioctl(dev, KACC_IOC_VERSION, &v) || v.abi != KACC_ABI_VERSION) { printf("FAIL version\n"); exit(1); }
    area = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_SHARED, dev, 0);
    if (area == MAP_FAILED) { perror("mmap"); exit(1); }
}

/* Two connected loopback TCP sockets, both given to the module: peers pa (one end), pb (the other). */
static void tcp_pair(int *pa, int *pb)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), a, b;
    struct sockaddr_in s = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof s;
    if (bind(l, (void *)&s, sizeof s) || listen(l, 1) || getsockname(l, (void *)&s, &sl)) { perror("listen"); exit(1); }
    a = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(a, (void *)&s, sizeof s)) { perror("connect"); exit(1); }
    b = accept(l, NULL, NULL);
    close(l);
    struct kacc_sock k1 = { a, -1 }, k2 = { b, -1 };
    if (ioctl(dev, KACC_IOC_ADD_SOCKET, &k1) || ioctl(dev, KACC_IOC_ADD_SOCKET, &k2)) { perror("add socket"); exit(1); }
    *pa = k1.index;
    *pb = k2.index;
}

/* Schedule builder in the area at offset 4096. */
#define NMAX 64
static struct kacc_node *N;
static uint32_t *S, n, ns;
static uint32_t sl_[NMAX][NMAX], sc_[NMAX];

static void begin(void)
{
    N = (struct kacc_node *)(area + 4096);
    S = (uint32_t *)(area + 4096 + NMAX * sizeof *N);
    memset(N, 0, NMAX * sizeof *N);
    memset(sc_, 0, sizeof sc_);
    N[0].kind = KACC_START;
    N[1].kind = KACC_END;
    n = 2;
}
static uint32_t node(int kind, int peer, void *buf, void *buf2, uint64_t len)
{
    N[n].kind = (uint8_t)kind;
    N[n].peer = peer;
    N[n].ctx = 7;
    N[n].tag = (int32_t)n;
    N[n].buf = (uint64_t)(uintptr_t)buf;
    N[n].buf2 = (uint64_t)(uintptr_t)buf2;
    N[n].len = len;
    return n++;
}
static void edge(uint32_t a, uint32_t b) { sl_[a][sc_[a]++] = b; }
static struct kacc_reg seal(void)
{
    ns = 0;
    for (uint32_t i = 0; i < n; i++) {
        N[i].first = ns;
        N[i].nsucc = sc_[i];
        for (uint32_t k = 0; k < sc_[i]; k++) S[ns++] = sl_[i][k];
    }
    struct kacc_reg r = { .nodes_off = 4096, .succ_off = 4096 + NMAX * sizeof *N, .state_off = 2048,
                          .uflag_off = 3072, .n = n, .nsucc = ns };
    return r;
}
static struct kacc_state *ST(void) { return (struct kacc_state *)(area + 2048); }

/* Wait (poll on the device) until the state block says done; the process's own steps too. */
static int wait_done(uint32_t id, int ms)
{
    struct kacc_area_hdr *h = (void *)area;
    for (int t = 0; t < ms / 10; t++) {
        h->acked = h->events;
        for (uint32_t i = 0; i < n; i++)
            if (area[3072 + i]) {
                area[3072 + i] = 0;
                struct kacc_node_done d = { .id = id, .node = i };
                if (ioctl(dev, KACC_IOC_NODE_DONE, &d)) return -2;
            }
        if (__atomic_load_n(&ST()->state, __ATOMIC_ACQUIRE) == KACC_S_DONE) return ST()->err;
        struct pollfd p = { dev, POLLIN, 0 };
        poll(&p, 1, 10);
    }
    return -1;
}

static void selftest(const char *tag)
{
    enum { M = 100000 };
    static int32_t src[M], dst[M], out[M];
    static double ds[1000], dd[1000];
    int pa, pb;
    char name[64];
    tcp_pair(&pa, &pb);
    begin();
    uint32_t s = node(KACC_SEND, pa, src, NULL, sizeof src), r = node(KACC_RECV, pb, dst, NULL, sizeof dst);
    uint32_t c = node(KACC_CALC, -1, src, dst, sizeof src), cp = node(KACC_COPY, -1, dst, out, sizeof dst);
    uint32_t cd = node(KACC_CALC, -1, ds, dd, sizeof ds), u = node(KACC_NOP, -1, NULL, NULL, 0);
    N[c].type = KACC_T_I32; N[c].op = KACC_OP_SUM;
    N[cd].type = KACC_T_F64; N[cd].op = KACC_OP_SUM;
    N[u].flags = KACC_F_USER_PRE;
    N[r].tag = N[s].tag;
    edge(0, s); edge(0, r); edge(0, cd); edge(s, 1); edge(r, c); edge(c, cp); edge(cp, u); edge(u, 1); edge(cd, 1);
    struct kacc_reg reg = seal();
    if (ioctl(dev, KACC_IOC_REGISTER, &reg)) { snprintf(name, sizeof name, "selftest%s-register", tag); verdict(0, name, strerror(errno)); return; }
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < M; i++) { src[i] = i * (run + 1) - 7; dst[i] = -1; out[i] = 0; }
        for (int i = 0; i < 1000; i++) { ds[i] = i * 0.5; dd[i] = run + 1.25; }
        int rc = ioctl(dev, KACC_IOC_START, &reg.id) ? -3 : wait_done(reg.id, 20000), bad = 0;
        for (int i = 0; i < M; i++) bad += out[i] != 2 * src[i];
        for (int i = 0; i < 1000; i++) bad += dd[i] != i * 0.5 + run + 1.25;
        char d[96];
        snprintf(d, sizeof d, "(run %d: result %d, %d wrong values)", run + 1, rc, bad);
        snprintf(name, sizeof name, "selftest%s-run%d", tag, run + 1);
        verdict(rc == 0 && !bad, name, d);
    }
    if (ioctl(dev, KACC_IOC_UNREGISTER, &reg.id)) verdict(0, "selftest-unregister", strerror(errno));
}

static unsigned long long proc_stat(const char *key)
{
    FILE *f = fopen("/proc/kumi_kacc", "r");
    char k[64];
    unsigned long long v, r = 0;
    if (!f) return 0;
    while (fscanf(f, "%63s %llu", k, &v) == 2)
        if (!strcmp(k, key)) r = v;
    fclose(f);
    return r;
}

static int wait_state(char *a, int d, int ms);

/* KACC_REG_RUNPIN and KACC_IOC_START_TAG (the kmod engine's registrations kept for reuse) */
static void runpin(void)
{
    enum { L = 8192 };
    int pa, pb, bad = 0, rcs[3];
    char d[256];
    tcp_pair(&pa, &pb);
    unsigned char *sb = mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *rb = mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (sb == MAP_FAILED || rb == MAP_FAILED) { verdict(0, "runpin", "mmap"); return; }
    begin();
    uint32_t x = node(KACC_SEND, pa, sb, NULL, L), y = node(KACC_RECV, pb, rb, NULL, L);
    N[x].tag = N[y].tag = 5;
    edge(0, x); edge(0, y); edge(x, 1); edge(y, 1);
    struct kacc_reg reg = seal();
    reg.flags = KACC_REG_RUNPIN;
    unsigned long long p0 = proc_stat("pinned_pages");
    if (ioctl(dev, KACC_IOC_REGISTER, &reg)) { verdict(0, "runpin", strerror(errno)); return; }
    unsigned long long p1 = proc_stat("pinned_pages");
    for (int run = 0; run < 3; run++) {
        if (run == 2) {                 /* new pages under the receive buffer's address */
            munmap(rb, L);
            if (mmap(rb, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != rb) {
                verdict(0, "runpin", "mmap MAP_FIXED");
                return;
            }
        }
        for (int i = 0; i < L; i++) { sb[i] = (unsigned char)(i * 13 + run); rb[i] = 0; }
        struct kacc_start t = { reg.id, run * 100000 };
        rcs[run] = ioctl(dev, KACC_IOC_START_TAG, &t) ? -3 : wait_done(reg.id, 20000);
        for (int i = 0; i < L; i++) bad += rb[i] != (unsigned char)(i * 13 + run);
    }
    unsigned long long p2 = proc_stat("pinned_pages");
    munmap(rb, L);                      /* a buffer gone: START cannot pin it */
    struct kacc_start t = { reg.id, 0 };
    int egone = ioctl(dev, KACC_IOC_START_TAG, &t) ? errno : 0;
    unsigned long long p3 = proc_stat("pinned_pages");
    ioctl(dev, KACC_IOC_UNREGISTER, &reg.id);
    /* the offset on the wire: A sends tag 5 started with 100000, B receives tag 100005 with 0 */
    static unsigned char ob[100];
    for (int i = 0; i < 100; i++) sb[i] = (unsigned char)(i + 77);
    begin();
    x = node(KACC_RECV, pb, ob, NULL, sizeof ob);
    N[x].tag = 100005;
    edge(0, x); edge(x, 1);
    struct kacc_reg rr = seal();
    int eoff = ioctl(dev, KACC_IOC_REGISTER, &rr) || ioctl(dev, KACC_IOC_START, &rr.id) ? -3 : 0;
    begin();
    x = node(KACC_SEND, pa, sb, NULL, sizeof ob);
    N[x].tag = 5;
    edge(0, x); edge(x, 1);
    /* (its nodes overwrite B's, which the module copied at REGISTER; its state block is its own) */
    struct kacc_reg rs = seal();
    rs.flags = KACC_REG_RUNPIN;
    rs.state_off = 2560;
    rs.uflag_off = 3584;
    struct kacc_start ts = { 0, 100000 };
    if (!eoff && (ioctl(dev, KACC_IOC_REGISTER, &rs) || (ts.id = rs.id, ioctl(dev, KACC_IOC_START_TAG, &ts)))) eoff = -4;
    int woff = eoff ? eoff : wait_done(rr.id, 20000), boff = 0;
    if (!eoff && wait_state(area + 512, dev, 20000)) woff = -5;     /* A's state block, at 2560 */
    for (int i = 0; i < 100; i++) boff += ob[i] != (unsigned char)(i + 77);
    ioctl(dev, KACC_IOC_UNREGISTER, &rr.id);
    ioctl(dev, KACC_IOC_UNREGISTER, &rs.id);
    snprintf(d, sizeof d, "(runs %d %d %d, %d wrong bytes, the last into pages mapped anew; pinned %llu -> %llu "
             "registered, %llu after the runs, %llu after a START on a buffer gone: %s; tag offset on the "
             "wire: %d, %d wrong)", rcs[0], rcs[1], rcs[2], bad, p0, p1, p2, p3, strerror(egone), woff, boff);
    verdict(!rcs[0] && !rcs[1] && !rcs[2] && !bad && p1 == p0 && p2 == p0 && p3 == p0 && egone == EFAULT &&
            !woff && !boff, "runpin", d);
}

static int expect_err(const char *what, int rc, int *cases)
{
    (*cases)++;
    if (rc == 0) { printf("FAIL fuzz: %s was accepted\n", what); fails++; return 0; }
    return 1;
}

static void fuzz(void)
{
    int cases = 0, pa, pb;
    static char buf[8192];
    struct kacc_reg r;
    tcp_pair(&pa, &pb);
#define BAD(what, setup) do { begin(); uint32_t x = node(KACC_RECV, pb, buf, NULL, 64); edge(0, x); edge(x, 1); \
        r = seal(); setup; expect_err(what, ioctl(dev, KACC_IOC_REGISTER, &r), &cases); } while (0)
    BAD("nodes beyond the area", r.nodes_off = AREA - 64);
    BAD("misaligned nodes", r.nodes_off = 4097);
    BAD("n = 1", r.n = 1);
    BAD("n huge", r.n = 0x7fffffff);
    BAD("succ beyond the area", r.succ_off = (uint64_t)-4);
    BAD("state beyond the area", r.state_off = AREA);
    BAD("uflag offset overflow", r.uflag_off = (uint64_t)-1);
    BAD("bad kind", N[x].kind = 99);
    BAD("node 0 not START", N[0].kind = KACC_NOP);
    BAD("bad flags", N[x].flags = 0x80);
    BAD("successor out of range", S[N[x].first] = 1000);
    BAD("successor START", S[N[x].first] = 0);
    BAD("successors beyond the array", N[x].nsucc = 100);
    BAD("first huge", N[x].first = 0xfffffff0u);
    BAD("END with successors", (N[1].nsucc = 1, N[1].first = 0));
    BAD("cycle", (S[N[x].first] = x));
    BAD("unknown peer", N[x].peer = 77);
    BAD("negative peer", N[x].peer = -5);
    BAD("buffer NULL", N[x].buf = 0);
    BAD("kernel buffer", N[x].buf = 0xffff888000000000ull);
    BAD("buffer wraps", (N[x].buf = (uint64_t)-100, N[x].len = 4096));
    BAD("length huge", N[x].len = 1ull << 40);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    BAD("receive into read-only memory", N[x].buf = (uint64_t)(uintptr_t)ro);
    BAD("CALC bad type", (N[x].kind = KACC_CALC, N[x].buf2 = (uint64_t)(uintptr_t)(buf + 64), N[x].type = 0, N[x].op = 1));
    BAD("CALC bad op", (N[x].kind = KACC_CALC, N[x].buf2 = (uint64_t)(uintptr_t)(buf + 64), N[x].type = KACC_T_I32, N[x].op = 77));
    BAD("CALC BAND on double", (N[x].kind = KACC_CALC, N[x].buf2 = (uint64_t)(uintptr_t)(buf + 64), N[x].type = KACC_T_F64, N[x].op = KACC_OP_BAND));
    BAD("CALC length not whole elements", (N[x].kind = KACC_CALC, N[x].buf2 = (uint64_t)(uintptr_t)(buf + 64), N[x].type = KACC_T_I32, N[x].op = 1, N[x].len = 6));
    BAD("unreachable node", (node(KACC_NOP, -1, NULL, NULL, 0), r = seal()));
    BAD("unknown REGISTER flag", r.flags = 0x80);
    BAD("RUNPIN with a NULL buffer", (r.flags = KACC_REG_RUNPIN, N[x].buf = 0));
    BAD("RUNPIN with a kernel buffer", (r.flags = KACC_REG_RUNPIN, N[x].buf = 0xffff888000000000ull));
    uint32_t id = 4242;
    struct kacc_node_done nd = { .id = 4242, .node = 3 };
    struct kacc_sock ks = { -1, 3000 }, kf = { open("/proc/self/stat", O_RDONLY), -1 },
                     ku = { socket(AF_INET, SOCK_DGRAM, 0), -1 }, kbad = { 1 << 20, -1 };
    expect_err("START of an unknown schedule", ioctl(dev, KACC_IOC_START, &id), &cases);
    expect_err("START_TAG of an unknown schedule", ioctl(dev, KACC_IOC_START_TAG, &(struct kacc_start){ 4242, 7 }), &cases);
    expect_err("UNREGISTER of an unknown schedule", ioctl(dev, KACC_IOC_UNREGISTER, &id), &cases);
    expect_err("NODE_DONE of an unknown schedule", ioctl(dev, KACC_IOC_NODE_DONE, &nd), &cases);
    expect_err("ADD_SOCKET unknown peer", ioctl(dev, KACC_IOC_ADD_SOCKET, &ks), &cases);
    expect_err("ADD_SOCKET of a file", ioctl(dev, KACC_IOC_ADD_SOCKET, &kf), &cases);
    expect_err("ADD_SOCKET of a UDP socket", ioctl(dev, KACC_IOC_ADD_SOCKET, &ku), &cases);
    expect_err("ADD_SOCKET bad descriptor", ioctl(dev, KACC_IOC_ADD_SOCKET, &kbad), &cases);
    expect_err("ADD_SOCKET to an attached peer", ioctl(dev, KACC_IOC_ADD_SOCKET, &(struct kacc_sock){ ku.fd, pa }), &cases);
    expect_err("unknown ioctl", ioctl(dev, _IO('K', 99)), &cases);
    expect_err("REGISTER from a bad user address", ioctl(dev, KACC_IOC_REGISTER, (void *)8), &cases);
    /* NODE_DONE of a node not flagged for the process */
    begin();
    uint32_t x = node(KACC_RECV, pb, buf, NULL, 64);
    edge(0, x); edge(x, 1);
    r = seal();
    if (ioctl(dev, KACC_IOC_REGISTER, &r) == 0) {
        ioctl(dev, KACC_IOC_START, &r.id);
        nd.id = r.id; nd.node = x;
        expect_err("NODE_DONE of a node the module runs", ioctl(dev, KACC_IOC_NODE_DONE, &nd), &cases);
        nd.node = 5000;
        expect_err("NODE_DONE of a node out of range", ioctl(dev, KACC_IOC_NODE_DONE, &nd), &cases);
        expect_err("START of a running schedule", ioctl(dev, KACC_IOC_START, &r.id), &cases);
        ioctl(dev, KACC_IOC_UNREGISTER, &r.id);           /* running: freed with the file */
    }
    /* random DAGs of valid nodes (messages between the pair's ends, CALC, COPY, steps of
     * the process): registered, run for a moment, dropped (running ones go with the file) */
    int ran = 0;
    for (int it = 0; it < 200; it++) {
        begin();
        uint32_t m = 1 + (uint32_t)rand() % 10;
        for (uint32_t i = 0; i < m; i++) {
            static const int kinds[] = { KACC_SEND, KACC_RECV, KACC_CALC, KACC_COPY, KACC_NOP };
            int kd = kinds[rand() % 5];
            uint64_t len = (uint64_t)(rand() % 64) * 8;
            uint32_t y = node(kd, kd == KACC_SEND ? pa : kd == KACC_RECV ? pb : -1, buf + rand() % 2048,
                              buf + 4096 + rand() % 2048, len);
            N[y].tag = rand() % 4;
            if (kd == KACC_CALC) { N[y].type = (uint8_t)(KACC_T_I64 + rand() % 4); N[y].op = (uint8_t)(1 + rand() % 4); }
            if (kd == KACC_NOP && rand() % 2) N[y].flags = KACC_F_USER_PRE;
            edge(0, y);
            for (uint32_t j = 2; j < y; j++) if (rand() % 4 == 0) edge(j, y);
            edge(y, 1);
        }
        r = seal();
        if (ioctl(dev, KACC_IOC_REGISTER, &r) == 0) {
            if (ioctl(dev, KACC_IOC_START, &r.id) == 0 && wait_done(r.id, 30) == 0) ran++;
            ioctl(dev, KACC_IOC_UNREGISTER, &r.id);
        } else {
            printf("FAIL fuzz: a valid random DAG was refused (%s)\n", strerror(errno));
            fails++;
        }
    }
    /* random node arrays: refused, or registered and run without harm */
    srand(12345);
    int accepted = 0;
    for (int it = 0; it < 400; it++) {
        begin();
        n = 2 + (uint32_t)rand() % 12;
        for (uint32_t i = 0; i < n; i++) {
            unsigned char *p = (unsigned char *)&N[i];
            for (size_t k = 0; k < sizeof N[i]; k++) p[k] = (unsigned char)rand();
            if (rand() % 2) { N[i].kind = (uint8_t)(1 + rand() % 7); N[i].flags = 0; N[i].peer = rand() % 3 - 1; }
            if (rand() % 2) { N[i].len = (uint64_t)(rand() % 256); N[i].buf = (uint64_t)(uintptr_t)(buf + rand() % 4096);
                              N[i].buf2 = (uint64_t)(uintptr_t)(buf + 4096 + rand() % 2048); }
            if (rand() % 2) { N[i].first = (uint32_t)(rand() % 20); N[i].nsucc = (uint32_t)(rand() % 3); }
        }
        if (rand() % 2) { N[0].kind = KACC_START; N[1].kind = KACC_END; N[1].nsucc = 0; }
        for (int k = 0; k < 24; k++) S[k] = (uint32_t)(rand() % (n + 1));
        r = (struct kacc_reg){ .nodes_off = 4096, .succ_off = 4096 + NMAX * sizeof *N, .state_off = 2048,
                               .uflag_off = 3072, .n = n, .nsucc = 24 };
        if (ioctl(dev, KACC_IOC_REGISTER, &r) == 0) {
            accepted++;
            ioctl(dev, KACC_IOC_START, &r.id);
            ioctl(dev, KACC_IOC_UNREGISTER, &r.id);
        }
    }
    char d[128];
    snprintf(d, sizeof d, "(%d bad inputs refused; 200 random DAGs registered, %d ran to the end; %d of 400 "
             "random arrays accepted)", cases, ran, accepted);
    verdict(fails == 0, "fuzz", d);
}

/* ------------------------------------------------------------ direct copies */
static int wait_state(char *a, int d, int ms)
{
    struct kacc_state *st = (struct kacc_state *)(a + 2048);
    for (int t = 0; t < ms / 10; t++) {
        ((struct kacc_area_hdr *)a)->acked = ((struct kacc_area_hdr *)a)->events;
        if (__atomic_load_n(&st->state, __ATOMIC_ACQUIRE) == KACC_S_DONE) return st->err;
        struct pollfd p = { d, POLLIN, 0 };
        poll(&p, 1, 10);
    }
    return -1;
}

static void direct(void)
{
    enum { M = 300000, SM = 1000 };     /* M ints: 1.2 MB, not page aligned below */
    static int32_t src[M + 3], dst[M + 3], acc[M + 3], want[M + 3];
    static unsigned char bsrc[SM], bdst[SM / 2];
    enum { FM = 20000 };                /* doubles: 160 kB */
    static double fsrc[FM], fscr[FM], facc[FM], fscr2[FM], facc2[FM], fout2[FM], fin5[FM], fout5[FM];
    int devA = dev, devB = open(KACC_DEVICE, O_RDWR);
    char *areaA = area, *areaB = devB < 0 ? MAP_FAILED : mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_SHARED, devB, 0);
    struct kacc_direct_id ida, idb;
    if (areaB == MAP_FAILED) { verdict(0, "direct-open", strerror(errno)); return; }
    if (ioctl(devA, KACC_IOC_DIRECT_ID, &ida) || ioctl(devB, KACC_IOC_DIRECT_ID, &idb) || ida.id == idb.id) {
        verdict(0, "direct-id", strerror(errno));
        return;
    }
    struct kacc_sock ka = { -1, -1 }, kb = { -1, -1 };    /* module peers without sockets */
    if (ioctl(devA, KACC_IOC_ADD_SOCKET, &ka) || ioctl(devB, KACC_IOC_ADD_SOCKET, &kb)) { verdict(0, "direct-peer", strerror(errno)); return; }
    /* refused: a wrong secret (counted), an id of no context, its own id */
    unsigned long long ref0 = proc_stat("direct_refused");
    struct kacc_direct_link bad = { ka.index, 0, idb.id, idb.secret ^ 1 };
    int e1 = ioctl(devA, KACC_IOC_DIRECT_LINK, &bad) ? errno : 0;
    bad.secret = ~idb.secret;
    int e2 = ioctl(devA, KACC_IOC_DIRECT_LINK, &bad) ? errno : 0;
    struct kacc_direct_link none = { ka.index, 0, idb.id ^ ida.id ^ 0x5a5a, idb.secret };
    int e3 = ioctl(devA, KACC_IOC_DIRECT_LINK, &none) ? errno : 0;
    struct kacc_direct_link self = { ka.index, 0, ida.id, ida.secret };
    int e4 = ioctl(devA, KACC_IOC_DIRECT_LINK, &self) ? errno : 0;
    char d[256];
    snprintf(d, sizeof d, "(wrong secret: %s, %s; unknown id: %s; own id: %s; refused counter +%llu)", strerror(e1),
             strerror(e2), strerror(e3), strerror(e4), proc_stat("direct_refused") - ref0);
    verdict(e1 == EACCES && e2 == EACCES && e3 == ENOENT && e4 == EINVAL && proc_stat("direct_refused") - ref0 == 2,
            "direct-wrong-cookie-refused", d);
    struct kacc_direct_link la = { ka.index, 0, idb.id, idb.secret }, lb = { kb.index, 0, ida.id, ida.secret };
    if (ioctl(devA, KACC_IOC_DIRECT_LINK, &la) || ioctl(devB, KACC_IOC_DIRECT_LINK, &lb)) { verdict(0, "direct-link", strerror(errno)); return; }
    int e5 = ioctl(devA, KACC_IOC_DIRECT_LINK, &la) ? errno : 0;
    verdict(e5 == EBUSY, "direct-link-twice-refused", strerror(e5));
    /* A: SEND src (offset 4 bytes into a page-crossing buffer), SEND bsrc (1000 B)
     * B: RECV dst -> CALC acc += dst; RECV bdst (500 B: truncated) */
    dev = devA; area = areaA;
    begin();
    uint32_t s1 = node(KACC_SEND, ka.index, src + 1, NULL, (size_t)M * 4), s2 = node(KACC_SEND, ka.index, bsrc, NULL, SM);
    uint32_t s3 = node(KACC_SEND, ka.index, fsrc, NULL, sizeof fsrc), s4 = node(KACC_SEND, ka.index, fsrc, NULL, sizeof fsrc);
    uint32_t s5 = node(KACC_SEND, ka.index, fsrc, NULL, sizeof fsrc);
    N[s1].tag = 100; N[s2].tag = 101; N[s3].tag = 102; N[s4].tag = 103; N[s5].tag = 104;
    edge(0, s1); edge(0, s2); edge(s1, 1); edge(s2, 1); edge(0, s3); edge(s3, 1); edge(0, s4); edge(s4, 1);
    edge(0, s5); edge(s5, 1);
    struct kacc_reg ra = seal();
    if (ioctl(devA, KACC_IOC_REGISTER, &ra)) { verdict(0, "direct-register-a", strerror(errno)); return; }
    dev = devB; area = areaB;
    begin();
    uint32_t r1 = node(KACC_RECV, kb.index, dst + 2, NULL, (size_t)M * 4), c = node(KACC_CALC, -1, dst + 2, acc + 3, (size_t)M * 4);
    uint32_t r2 = node(KACC_RECV, kb.index, bdst, NULL, sizeof bdst);
    N[r1].tag = 100; N[r2].tag = 101; N[c].type = KACC_T_I32; N[c].op = KACC_OP_SUM;
    edge(0, r1); edge(r1, c); edge(c, 1); edge(0, r2); edge(r2, 1);
    /* scratch: r3 -> c3 may be fused; r4 -> c4 -> cp4 may not (cp4 reads the scratch) */
    uint32_t r3 = node(KACC_RECV, kb.index, fscr, NULL, sizeof fscr), c3 = node(KACC_CALC, -1, fscr, facc, sizeof fscr);
    uint32_t r4 = node(KACC_RECV, kb.index, fscr2, NULL, sizeof fscr2), c4 = node(KACC_CALC, -1, fscr2, facc2, sizeof fscr2);
    uint32_t cp4 = node(KACC_COPY, -1, fscr2, fout2, sizeof fscr2);
    N[r3].tag = 102; N[r4].tag = 103; N[r3].flags = N[r4].flags = KACC_F_SCRATCH;
    N[c3].type = N[c4].type = KACC_T_F64; N[c3].op = N[c4].op = KACC_OP_SUM;
    edge(0, r3); edge(r3, c3); edge(c3, 1); edge(0, r4); edge(r4, c4); edge(c4, cp4); edge(cp4, 1);
    /* out: r5 into fout5, c5: fout5 = fin5 + received (fused into fout5, no flag) */
    uint32_t r5 = node(KACC_RECV, kb.index, fout5, NULL, sizeof fout5), c5 = node(KACC_CALC, -1, fin5, fout5, sizeof fout5);
    N[r5].tag = 104; N[c5].type = KACC_T_F64; N[c5].op = KACC_OP_SUM;
    edge(0, r5); edge(r5, c5); edge(c5, 1);
    struct kacc_reg rb = seal();
    if (ioctl(devB, KACC_IOC_REGISTER, &rb)) { verdict(0, "direct-register-b", strerror(errno)); return; }
    dev = devA; area = areaA;
    for (int run = 0; run < 2; run++) {
        unsigned int seed = 12345u + (unsigned)run;
        for (int i = 0; i < M + 3; i++) {
            seed = seed * 1103515245u + 12345u;
            src[i] = (int32_t)seed; dst[i] = -1; acc[i] = i * 3 - 11;
        }
        for (int i = 0; i < M; i++) want[i] = (int32_t)((uint32_t)acc[i + 3] + (uint32_t)src[i + 1]);
        for (int i = 0; i < SM; i++) bsrc[i] = (unsigned char)(i * 7 + run);
        memset(bdst, 0, sizeof bdst);
        for (int i = 0; i < FM; i++) {
            fsrc[i] = i * 0.25 + run; fscr[i] = fscr2[i] = -7.0; facc[i] = facc2[i] = i; fout2[i] = 0;
            fin5[i] = 1.0 / (i + 3); fout5[i] = -5.0;
        }
        unsigned long long b0 = proc_stat("direct_bytes"), sent0 = proc_stat("bytes_sent"), f0 = proc_stat("direct_fused_bytes");
        unsigned long long fo0 = proc_stat("direct_fused_out_bytes");
        int ea, eb;
        if (run == 0) {                 /* the receive posted first, then the send */
            eb = ioctl(devB, KACC_IOC_START, &rb.id);
            ea = ioctl(devA, KACC_IOC_START, &ra.id);
        } else {                        /* the send queued first */
            ea = ioctl(devA, KACC_IOC_START, &ra.id);
            eb = ioctl(devB, KACC_IOC_START, &rb.id);
        }
        int ra_ = ea ? -3 : wait_state(areaA, devA, 20000), rb_ = eb ? -3 : wait_state(areaB, devB, 20000), wrong = 0;
        wrong += memcmp(dst + 2, src + 1, (size_t)M * 4) != 0;
        wrong += dst[0] != -1 || dst[1] != -1 || dst[M + 2] != -1;
        wrong += memcmp(acc + 3, want, (size_t)M * 4) != 0;
        wrong += memcmp(bdst, bsrc, sizeof bdst) != 0;
        int fbad = 0, untouched = 1;
        for (int i = 0; i < FM; i++) {
            fbad += facc[i] != i + fsrc[i] || facc2[i] != i + fsrc[i] || fout2[i] != fsrc[i] || fscr2[i] != fsrc[i];
            fbad += fout5[i] != fsrc[i] + fin5[i];
            untouched &= fscr[i] == -7.0;
        }
        unsigned long long db = proc_stat("direct_bytes") - b0, ds = proc_stat("bytes_sent") - sent0;
        unsigned long long fu = proc_stat("direct_fused_bytes") - f0, fo = proc_stat("direct_fused_out_bytes") - fo0;
        wrong += fbad;
        snprintf(d, sizeof d, "(run %d: sender %d, receiver %d (want %d: truncated), %d wrong, %llu bytes direct, %llu fused "
                 "(%llu into an inout), %s, %llu on sockets)",
                 run + 1, ra_, rb_, -EMSGSIZE, wrong, db, fu, fo, untouched ? "scratch unwritten" : "SCRATCH WRITTEN", ds);
        char name[40];
        snprintf(name, sizeof name, "direct-copy-run%d", run + 1);
        verdict(ra_ == 0 && rb_ == -EMSGSIZE && !wrong && db == (unsigned long long)M * 4 + SM + 3 * sizeof fsrc &&
                fu == 2 * sizeof fsrc && fo == sizeof fsrc && untouched && ds == 0, name, d);
    }
    /* the receiver closes while a send waits: the send fails, B's pages are unpinned */
    unsigned long long pin0 = proc_stat("pinned_pages");
    int ea = ioctl(devA, KACC_IOC_START, &ra.id);
    munmap(areaB, AREA);
    close(devB);
    int rc = ea ? -3 : wait_state(areaA, devA, 20000);
    snprintf(d, sizeof d, "(sender %d, want %d; pinned pages %llu -> %llu)", rc, -ECONNRESET, pin0, proc_stat("pinned_pages"));
    verdict(rc == -ECONNRESET && proc_stat("pinned_pages") < pin0, "direct-receiver-closed", d);
    ioctl(devA, KACC_IOC_UNREGISTER, &ra.id);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "selftest";
    open_dev();
    if (!strcmp(what, "selftest")) {
        selftest("");
        runpin();
    } else if (!strcmp(what, "fuzz")) {
        fuzz();
        selftest("-after-fuzz");
    } else if (!strcmp(what, "direct")) {
        direct();
    } else if (!strcmp(what, "hang")) {
        int pa, pb;
        static char buf[4096];
        tcp_pair(&pa, &pb);
        begin();
        uint32_t x = node(KACC_RECV, pb, buf, NULL, sizeof buf);
        edge(0, x); edge(x, 1);
        struct kacc_reg r = seal();
        if (ioctl(dev, KACC_IOC_REGISTER, &r) || ioctl(dev, KACC_IOC_START, &r.id)) { perror("hang"); return 1; }
        printf("running\n");
        fflush(stdout);
        for (;;) pause();
    }
    return fails ? 1 : 0;
}
