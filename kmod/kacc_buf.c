// SPDX-License-Identifier: GPL-2.0
/* The KACC module's pinned buffers (struct kbuf): pinning and unpinning
 * them, copies between them and memory, CALC and COPY straight on their pages.  Every page-to-page
 * loop walks the buffers a run at a time that crosses no page of any of them
 * (kb_run), so that each run is one kmap_local_page per buffer. */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <asm/fpu/api.h>
#include "kumi_kacc_uapi.h"
#include "kacc_calc.h"
#include "kacc_int.h"

void kacc_kb_unpin(struct kbuf *b)
{
    if (b->np) {
        kacc_count_pinned(-(s64)b->np);
        if (b->write) unpin_user_pages_dirty_lock(b->pages, b->np, true);
        else unpin_user_pages(b->pages, b->np);
    }
    b->np = 0;
    b->addr = b->len = 0;
}

void kacc_kb_free(struct kbuf *b)
{
    kacc_kb_unpin(b);
    kvfree(b->pages);
    kvfree(b->bv);
    memset(b, 0, sizeof *b);
}

/* A buffer's address range as pin_user_pages_fast takes it (0, or -EFAULT). */
int kacc_kb_check(u64 addr, u64 len)
{
    if (!len) return 0;
    if (!addr || len > KACC_MAX_MSG || addr + len < addr || !access_ok((void __user *)(uintptr_t)addr, len))
        return -EFAULT;
    return 0;
}

int kacc_kb_pin(struct kbuf *b, u64 addr, u64 len, bool write)
{
    u64 first, np, off;
    unsigned int i;
    int got;
    bool wrote = true;

    kacc_kb_unpin(b);                        /* (nothing pinned: the arrays of an earlier run stay) */
    if (!len) return 0;
    if (kacc_kb_check(addr, len)) return -EFAULT;
    first = addr & PAGE_MASK;
    off = addr & ~PAGE_MASK;
    np = (off + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
    if (np > INT_MAX) return -EFAULT;
    if (np > b->cap) {
        kvfree(b->pages);
        kvfree(b->bv);
        b->cap = 0;
        b->pages = kvmalloc_array(np, sizeof *b->pages, GFP_KERNEL);
        b->bv = kvmalloc_array(np, sizeof *b->bv, GFP_KERNEL);
        if (!b->pages || !b->bv) { kvfree(b->pages); kvfree(b->bv); b->pages = NULL; b->bv = NULL; return -ENOMEM; }
        b->cap = (unsigned int)np;
    }
    /* Pinned for writing even where the module only reads: a read-only pin of
     * anonymous memory not written yet would get the shared zero page, not
     * what the rank writes there later; read-only mappings (constant data)
     * are pinned read-only. */
    got = pin_user_pages_fast(first, (int)np, FOLL_WRITE | FOLL_LONGTERM, b->pages);
    if (got != (int)np && !write) {
        if (got > 0) unpin_user_pages(b->pages, got);
        got = pin_user_pages_fast(first, (int)np, FOLL_LONGTERM, b->pages);
        wrote = false;
    }
    if (got != (int)np) {
        if (got > 0) unpin_user_pages(b->pages, got);
        return -EFAULT;                 /* the arrays stay for kacc_kb_free */
    }
    b->addr = addr; b->len = len; b->np = (unsigned int)np; b->write = wrote;
    kacc_count_pinned((s64)np);
    for (i = 0; i < np; i++) {
        u64 o = i ? 0 : off, l = min_t(u64, PAGE_SIZE - o, off + len - ((u64)i << PAGE_SHIFT) - o);
        b->bv[i].bv_page = b->pages[i];
        b->bv[i].bv_offset = (unsigned int)o;
        b->bv[i].bv_len = (unsigned int)l;
    }
    return 0;
}

void kacc_kb_iter(struct kbuf *b, struct iov_iter *it, unsigned int dir, u64 off, u64 len)
{
    iov_iter_bvec(it, dir, b->bv, b->np, b->len);
    iov_iter_advance(it, off);
    iov_iter_truncate(it, len);
}

/* The run at offset off (of len) of nb buffers: its length (crossing no
 * page of any of them), and each buffer's page and offset in it. */
static size_t kb_run(const struct kbuf *const *b, unsigned int nb, u64 off, u64 len, struct page **pg, size_t *po)
{
    size_t l = (size_t)min_t(u64, len - off, PAGE_SIZE);
    unsigned int k;
    for (k = 0; k < nb; k++) {
        u64 a = (b[k]->addr & ~PAGE_MASK) + off;
        po[k] = a & ~PAGE_MASK;
        pg[k] = b[k]->pages[a >> PAGE_SHIFT];
        l = min_t(size_t, l, PAGE_SIZE - po[k]);
    }
    return l;
}

/* Copy len bytes between mem and the buffer at offset off. */
void kacc_kb_rw(struct kbuf *b, u64 off, void *mem, size_t len, bool to_buf)
{
    const struct kbuf *bs[1] = { b };
    u64 end = off + len;
    while (off < end) {
        struct page *pg[1];
        size_t po[1], chunk = kb_run(bs, 1, off, end, pg, po);
        char *k = kmap_local_page(pg[0]);
        if (to_buf) memcpy(k + po[0], mem, chunk);
        else memcpy(mem, k + po[0], chunk);
        kunmap_local(k);
        mem = (char *)mem + chunk;
        off += chunk;
    }
}

/* The FPU taken for up to this many runs, then a chance to be preempted. */
#define KACC_FPU_RUNS 16
static void fpu_yield(unsigned int *runs, bool more)
{
    if (++*runs % KACC_FPU_RUNS == 0 && more) {
        kernel_fpu_end();
        cond_resched();
        kernel_fpu_begin();
    }
}

/* CALC: y = y op x, straight on the pinned pages of both buffers; through the
 * scratch pages (3 copies a page) only where an element could straddle a page
 * (a buffer not aligned to its element size).  Returns the elements reduced. */
u64 kacc_calc_bufs(struct kctx *c, const struct kacc_node *nd, struct kbuf *x, struct kbuf *y)
{
    size_t esz = kacc_type_size(nd->type), chunk = (PAGE_SIZE / esz) * esz;
    const struct kbuf *bs[2] = { x, y };
    char *a = c->scratch, *b = a + PAGE_SIZE;
    unsigned int runs = 0;
    u64 off;
    if (!((x->addr | y->addr) % esz)) {
        kernel_fpu_begin();
        for (off = 0; off < nd->len;) {
            struct page *pg[2];
            size_t po[2], l = kb_run(bs, 2, off, nd->len, pg, po);
            char *kx = kmap_local_page(pg[0]);
            char *ky = kmap_local_page(pg[1]);
            kacc_reduce(nd->type, nd->op, kx + po[0], ky + po[1], l / esz);
            kunmap_local(ky);
            kunmap_local(kx);
            off += l;
            fpu_yield(&runs, off < nd->len);
        }
        kernel_fpu_end();
    } else {
        for (off = 0; off < nd->len; off += chunk) {
            size_t l = (size_t)min_t(u64, chunk, nd->len - off);
            kacc_kb_rw(x, off, a, l, false);
            kacc_kb_rw(y, off, b, l, false);
            kernel_fpu_begin();
            kacc_reduce(nd->type, nd->op, a, b, l / esz);
            kernel_fpu_end();
            kacc_kb_rw(y, off, b, l, true);
        }
    }
    return nd->len / esz;
}

/* A CALC fused with the RECV into its inout (kacc_direct.c): y = a op src (src the sender's
 * pages, what the RECV would have written into y), run by run over the three buffers: src's
 * run copied into y's, then reduced with a's while it is in the cache; the arithmetic of the
 * copy and the CALC done apart, bit for bit.  Process context (it may be preempted).
 * Returns the elements reduced. */
u64 kacc_calc_out(struct kctx *c, const struct kacc_node *nd, struct kbuf *a, const struct kbuf *src,
                  struct kbuf *y)
{
    size_t esz = kacc_type_size(nd->type);
    const struct kbuf *bs[3] = { a, src, y };
    unsigned int runs = 0;
    u64 off;
    if ((a->addr | src->addr | y->addr) % esz) {
        kacc_kb_copy(y, src, nd->len, true);
        return kacc_calc_bufs(c, nd, a, y);
    }
    kernel_fpu_begin();
    for (off = 0; off < nd->len;) {
        struct page *pg[3];
        size_t po[3], l = kb_run(bs, 3, off, nd->len, pg, po);
        char *ka = kmap_local_page(pg[0]);
        char *ks = kmap_local_page(pg[1]);
        char *ky = kmap_local_page(pg[2]);
        memmove(ky + po[2], ks + po[1], l);
        kacc_reduce(nd->type, nd->op, ka + po[0], ky + po[2], l / esz);
        kunmap_local(ky);
        kunmap_local(ks);
        kunmap_local(ka);
        off += l;
        fpu_yield(&runs, off < nd->len);
    }
    kernel_fpu_end();
    return nd->len / esz;
}

/* Copy len bytes from the start of src to the start of dst, page to page (one
 * copy), a run at a time that crosses no page of either buffer; memmove: a
 * COPY node's two buffers may overlap.  may_sleep: yield the CPU now and then
 * (process context only). */
void kacc_kb_copy(struct kbuf *dst, const struct kbuf *src, u64 len, bool may_sleep)
{
    const struct kbuf *bs[2] = { src, dst };
    unsigned int runs = 0;
    u64 off;
    for (off = 0; off < len;) {
        struct page *pg[2];
        size_t po[2], l = kb_run(bs, 2, off, len, pg, po);
        char *ks = kmap_local_page(pg[0]);
        char *kd = kmap_local_page(pg[1]);
        memmove(kd + po[1], ks + po[0], l);
        kunmap_local(kd);
        kunmap_local(ks);
        off += l;
        if (may_sleep && ++runs % 64 == 0) cond_resched();
    }
}
