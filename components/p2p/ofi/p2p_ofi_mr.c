/* p2p/ofi registration cache: send buffers registered for remote read,
 * kept in an LRU list up to p2p_ofi_mr_cache entries, released when a
 * registration is no longer used or the cache is flushed.  Every
 * registration (these and windows', p2p_ofi_rma.c) is also on ofi_regs, with
 * the key it was made with: a checkpoint closes them and the next init makes
 * them again with the same keys (p2p_ofi_ckpt.c). */
#include "p2p_ofi.h"

struct ofi_mr *ofi_regs;

void ofi_mr_link(struct ofi_mr *m)
{
    m->aprev = NULL;
    m->anext = ofi_regs;
    if (ofi_regs) ofi_regs->aprev = m;
    ofi_regs = m;
}

void ofi_mr_unlink(struct ofi_mr *m)
{
    if (m->aprev) m->aprev->anext = m->anext;
    else if (ofi_regs == m) ofi_regs = m->anext;
    if (m->anext) m->anext->aprev = m->aprev;
    m->aprev = m->anext = NULL;
}

/* Register m (base, len, access, key) with the domain and, where the
 * provider wants it, the endpoint.  0 or a libfabric error. */
int ofi_mr_register(struct ofi_mr *m)
{
    int rc = fi_mr_reg(ofi_domain, m->base, m->len, m->access, 0, m->key, 0, &m->mr, NULL);
    if (rc == 0 && ofi_mr_endpoint) {
        rc = fi_mr_bind(m->mr, &ofi_ep->fid, 0);
        if (rc == 0) rc = fi_mr_enable(m->mr);
        if (rc) fi_close(&m->mr->fid);
    }
    if (rc) m->mr = NULL;
    return rc;
}

static void ofi_lru_unlink(struct ofi_mr *m)
{
    if (m->prev) m->prev->next = m->next;
    else ofi_lru_head = m->next;
    if (m->next) m->next->prev = m->prev;
    else ofi_lru_tail = m->prev;
    m->prev = m->next = NULL;
}

static void ofi_lru_push(struct ofi_mr *m)
{
    m->prev = NULL;
    m->next = ofi_lru_head;
    if (ofi_lru_head) ofi_lru_head->prev = m;
    ofi_lru_head = m;
    if (!ofi_lru_tail) ofi_lru_tail = m;
}

static void ofi_mr_free(struct ofi_mr *m)
{
    if (m->mr) fi_close(&m->mr->fid);
    ofi_mr_unlink(m);
    free(m);
}

void ofi_mr_release(struct ofi_mr *m)
{
    if (--m->refs > 0) return;
    if (!m->cached) ofi_mr_free(m);
}

/* A registration covering [buf, buf+len) for remote read. */
struct ofi_mr *ofi_mr_get(const void *buf, size_t len, int *err)
{
    char *b = (char *)buf;
    for (struct ofi_mr *m = ofi_lru_head; m; m = m->next) {
        if (b >= m->base && b + len <= m->base + m->len) {
            ofi_lru_unlink(m);
            ofi_lru_push(m);
            m->refs++;
            return m;
        }
    }
    struct ofi_mr *m = calloc(1, sizeof *m);
    if (!m) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    /* register whole pages: neighbouring buffers then share an entry */
    uintptr_t lo = (uintptr_t)b & ~(uintptr_t)4095, hi = ((uintptr_t)b + len + 4095) & ~(uintptr_t)4095;
    m->base = (char *)lo;
    m->len = hi - lo;
    m->access = FI_REMOTE_READ;
    m->key = ofi_prov_key ? 0 : ofi_next_key++;
    int rc = ofi_mr_register(m);
    if (rc) {                               /* the page-rounded range may be refused: exact range */
        m->base = b;
        m->len = len;
        m->key = ofi_prov_key ? 0 : ofi_next_key++;
        rc = ofi_mr_register(m);
    }
    if (rc) {
        free(m);
        *err = rc;
        return NULL;
    }
    ofi_mr_link(m);
    m->refs = 1;
    if (ofi_cache_max > 0) {
        m->cached = 1;
        ofi_lru_push(m);
        if (++ofi_ncached > ofi_cache_max) {
            /* drop the least recently used entry that nobody uses */
            for (struct ofi_mr *v = ofi_lru_tail; v; v = v->prev) {
                if (v->refs > 0) continue;
                ofi_lru_unlink(v);
                ofi_ncached--;
                ofi_mr_free(v);
                break;
            }
        }
    }
    return m;
}

void ofi_mr_flush(void)
{
    while (ofi_lru_head) {
        struct ofi_mr *m = ofi_lru_head;
        ofi_lru_unlink(m);
        ofi_ncached--;
        m->cached = 0;
        if (m->refs == 0) ofi_mr_free(m);
    }
}
