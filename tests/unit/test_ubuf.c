/* Unit test of the request layer's cache of unexpected messages' buffers
 * (framework/request/req_bufs.c, kumi_ubuf_*), in process:
 *  - a window of 64 buffers of one class (8 KiB + 1 B -> the 16 KiB class,
 *    as a bi-directional bandwidth test's window of unexpected messages),
 *    freed, is kept whole (1 MiB: kumi_ubuf_cached) and taken again from
 *    the cache (with 4 kept per class, 60 went back to malloc, whose heap
 *    trimming made them new pages every window);
 *  - the cache of a class holds at most 1 MiB (64 of 16 KiB) but at least
 *    4 (of 256 KiB): the 65th freed 16 KiB buffer is not kept; after
 *    kumi_ubuf_drain nothing is;
 *  - sizes map to their class (2-4 KiB share the 4 KiB class; a size just
 *    over a power of two takes the next class), buffers are writable to
 *    their size, and sizes outside 2 KiB - 256 KiB are plain malloc. */
#include "request/request.h"
#include "ut.h"

#define W 64

static int in(void *p, void **set, int n)
{
    for (int i = 0; i < n; i++)
        if (set[i] == p) return 1;
    return 0;
}

static void test_window(void)
{
    UT_CASE("window");
    void *a[W], *b[W];
    for (int i = 0; i < W; i++) {
        a[i] = kumi_ubuf_alloc(8193);
        CHECK(a[i] != NULL, "alloc %d", i);
        memset(a[i], i, 16384);                  /* the whole class size is usable */
    }
    CHECK_INT(kumi_ubuf_cached(), 0);
    for (int i = 0; i < W; i++) kumi_ubuf_free(a[i]);
    CHECK_INT(kumi_ubuf_cached(), W * 16384);
    int reused = 0;
    for (int i = 0; i < W; i++) {
        b[i] = kumi_ubuf_alloc(12000 + i);       /* same class: 8 KiB + 1 .. 16 KiB */
        reused += in(b[i], a, W);
    }
    CHECK_INT(reused, W);
    CHECK_INT(kumi_ubuf_cached(), 0);
    for (int i = 0; i < W; i++) kumi_ubuf_free(b[i]);
    kumi_ubuf_drain();
}

static void test_limits(void)
{
    UT_CASE("limits");
    void *a[W + 1], *c[8];
    for (int i = 0; i < W + 1; i++) a[i] = kumi_ubuf_alloc(16384);
    for (int i = 0; i < W + 1; i++) kumi_ubuf_free(a[i]);   /* the last is not kept */
    CHECK_INT(kumi_ubuf_cached(), W * 16384);
    int reused = 0;
    void *b[W + 1];
    for (int i = 0; i < W + 1; i++) {
        b[i] = kumi_ubuf_alloc(16384);
        reused += in(b[i], a, W);
    }
    /* the 65th may be malloc's reuse of the freed a[W]: at least 64 from the cache, all of a[0..63] */
    CHECK(reused >= W, "%d of %d 16 KiB buffers came back (64 are kept)", reused, W + 1);
    for (int i = 0; i < W + 1; i++) kumi_ubuf_free(b[i]);
    kumi_ubuf_drain();
    CHECK_INT(kumi_ubuf_cached(), 0);

    for (int i = 0; i < 8; i++) c[i] = kumi_ubuf_alloc(256 << 10);
    for (int i = 0; i < 8; i++) kumi_ubuf_free(c[i]);        /* 4 of 256 KiB kept */
    CHECK_INT(kumi_ubuf_cached(), 4 * (256 << 10));
    void *d[8];
    reused = 0;
    for (int i = 0; i < 8; i++) {
        d[i] = kumi_ubuf_alloc((256 << 10) - i);
        reused += in(d[i], c, 8);
    }
    CHECK(reused >= 4, "%d of 8 256 KiB buffers came back (at least 4 are kept)", reused);
    for (int i = 0; i < 8; i++) kumi_ubuf_free(d[i]);
    kumi_ubuf_drain();
}

static void test_classes(void)
{
    UT_CASE("classes");
    void *p = kumi_ubuf_alloc(2048), *q;
    memset(p, 1, 4096);
    kumi_ubuf_free(p);
    q = kumi_ubuf_alloc(4096);                   /* 2-4 KiB: one class */
    CHECK_PTR(q, p);
    kumi_ubuf_free(q);
    q = kumi_ubuf_alloc(4097);                   /* the next class: not the 4 KiB buffer */
    CHECK(q != p, "4097 B took the 4 KiB class's buffer");
    memset(q, 2, 8192);
    kumi_ubuf_free(q);
    p = kumi_ubuf_alloc(100);                    /* outside the classes: malloc, freed */
    CHECK(p != NULL, "small alloc");
    memset(p, 3, 100);
    kumi_ubuf_free(p);
    p = kumi_ubuf_alloc((256 << 10) + 1);
    CHECK(p != NULL, "large alloc");
    memset(p, 4, (256 << 10) + 1);
    kumi_ubuf_free(p);
    kumi_ubuf_free(NULL);
    kumi_ubuf_drain();
}

int main(void)
{
    test_window();
    test_limits();
    test_classes();
    return ut_done("test_ubuf");
}
