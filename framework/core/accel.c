/* The accel framework's glue (kumi/accel.h): the accel component of highest
 * priority whose init() succeeds, chosen at first use; MPIX_Query_cuda_support.
 * Without one, kumi_accel() is NULL and nothing else is called. */
#include "core/core.h"
#include "registry/registry.h"
#include <kumi/accel.h>
#include <kumi/param.h>
#include <stdlib.h>
#include <string.h>

static const struct kumi_accel_ops *aops;
static void *cache;
static const char *aname;
static int chosen;            /* 0: not yet; 1: chosen (aops may be NULL) */

/* Choose the component (once): the first available one whose init() succeeds. */
static const struct kumi_accel_ops *choose(void)
{
    kumi_lock();
    if (!chosen) {
        int n = 0;
        struct kumi_comp_entry **av = kumi_registry_available("accel", &n);
        for (int i = 0; av && i < n; i++) {
            const struct kumi_accel_ops *ops = av[i]->comp ? av[i]->comp->ops : NULL;
            if (!ops) continue;
            if (ops->init && ops->init() != MPI_SUCCESS) {
                kumi_log(1, "accel: %s: not used in this process", av[i]->name);
                continue;
            }
            av[i]->status = KUMI_COMP_SELECTED;
            aops = ops;
            aname = av[i]->name;
            __atomic_store_n(&kumi_accel_on, true, __ATOMIC_RELEASE);
            kumi_log(1, "accel/%s selected", aname);
            break;
        }
        __atomic_store_n(&chosen, 1, __ATOMIC_RELEASE);
    }
    kumi_unlock();
    return aops;
}

const struct kumi_accel_ops *kumi_accel(void)
{
    if (__atomic_load_n(&chosen, __ATOMIC_ACQUIRE)) return aops;
    if (kumi_state != KUMI_STATE_INIT) return NULL;
    return choose();
}

/* At start-up (kumi_runtime_start), before the key exchange's fence: the
 * choice is made then so that the process can publish it (mpi/coll_accel.c). */
void kumi_accel_choose_early(void)
{
    if (!__atomic_load_n(&chosen, __ATOMIC_ACQUIRE)) choose();
}

const char *kumi_accel_name(void)
{
    return kumi_accel() ? aname : NULL;
}

static void pipe_fini(void);
static void scratch_fini(void);

void kumi_accel_finalize(void)
{
    kumi_accel_on = false;
    if (cache && aops && aops->host_free) aops->host_free(cache);
    cache = NULL;
    pipe_fini();
    scratch_fini();
    if (aops && aops->finalize) aops->finalize();
    aops = NULL;
    aname = NULL;
    __atomic_store_n(&chosen, 0, __ATOMIC_RELEASE);
}

/* As in Open MPI and MPICH: 1 when device buffers are supported at run time,
 * i.e. the cuda accel component is usable in this process; else 0. */
KUMI_EXPORT int MPIX_Query_cuda_support(void)
{
    const char *n = kumi_accel_name();
    return n && !strcmp(n, "cuda");
}

/* ------------------------------------------------ pipelined copies
 * A staged buffer larger than one chunk that is not pinned memory (above
 * KUMI_STAGE_CACHE) moves in chunks through NSLOT pinned slots with the
 * component's asynchronous copies (contract 1.1): device to host, the DMA of
 * the next chunks runs while the CPU copies a finished slot out; host to
 * device, the CPU fills a slot while the DMA of the previous ones runs.  One
 * pipeline per process (busy: the next caller copies synchronously);
 * parameter kumi_base_accel_chunk (0: never). */
enum { NSLOT = KUMI_ACCEL_NSLOT };
static long long accel_chunk = 1 << 20;
struct kumi_accel_pipe {
    void *stream, *ev[NSLOT], *slot[NSLOT];
    size_t chunk;
    int state;                  /* 0 not made, 1 ready, -1 unavailable */
    int busy;                   /* atomic */
    /* jobs of the incremental interface (kumi_accel_pipe_in/_out): issued, finished */
    size_t iss, fin;
    char *jdst[NSLOT];          /* an in-job's host destination (NULL: an out-job) */
    size_t jlen[NSLOT];
};
/* 0: kumi_accel_copy_in/_out; 1, 2: the request layer's sends and receives */
static struct kumi_accel_pipe pipes[3];
#define pl pipes[0]

void kumi_accel_register_params(void)
{
    kumi_param_register_int("kumi", "base", "accel_chunk", 1 << 20,
                            "Device buffers staged through host memory (accel): bytes per chunk of the pipelined "
                            "copies of buffers above 4 MiB (asynchronous copies through pinned slots; a message "
                            "from a device buffer goes chunk by chunk, each sent while the next is copied); "
                            "0: one synchronous copy", KUMI_LEVEL_TUNER, &accel_chunk);
}

static void pipe_fini1(struct kumi_accel_pipe *p)
{
    if (p->state == 1 && aops) {
        for (int i = 0; i < NSLOT; i++) {
            if (p->ev[i]) aops->event_free(p->ev[i]);
            if (p->slot[i]) aops->host_free(p->slot[i]);
        }
        if (p->stream) aops->stream_free(p->stream);
    }
    int busy = p->busy;                 /* a holder remakes it (pipe_get) and keeps it */
    memset(p, 0, sizeof *p);
    p->busy = busy;
}

static void pipe_fini(void)
{
    for (int i = 0; i < 3; i++) pipe_fini1(&pipes[i]);
}

/* Pipeline p, held (release with pipe_put1), or false: copy synchronously. */
static bool pipe_get1(struct kumi_accel_pipe *p, size_t n)
{
    if (accel_chunk <= 0 || n <= (size_t)accel_chunk || p->state < 0 || !aops->copy_to_host_async ||
        !aops->copy_to_dev_async || !aops->stream_new || !aops->event_new || !aops->event_record ||
        !aops->event_sync || !aops->event_query)
        return false;
    if (__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) return false;
    if (p->state == 1 && p->chunk != (size_t)accel_chunk) pipe_fini1(p);   /* the parameter changed */
    if (p->state == 0) {
        bool ok = !aops->stream_new(&p->stream);
        p->chunk = (size_t)accel_chunk;
        for (int i = 0; ok && i < NSLOT; i++)
            ok = !aops->event_new(&p->ev[i]) && !aops->host_alloc(p->chunk, &p->slot[i]);
        p->state = 1;
        if (!ok) {
            kumi_log(1, "accel/%s: no asynchronous copies (stream, events or pinned slots refused): "
                     "synchronous copies", aname);
            pipe_fini1(p);
            p->state = -1;
        }
        p->busy = 1;
    }
    p->iss = p->fin = 0;
    if (p->state == 1) return true;
    __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
    return false;
}

static bool pipe_get(size_t n) { return pipe_get1(&pl, n); }
static void pipe_put(void) { __atomic_store_n(&pl.busy, 0, __ATOMIC_RELEASE); }

/* ---- the incremental interface (core.h; request/req_accel.c) */
struct kumi_accel_pipe *kumi_accel_pipe_take(int which, size_t n)
{
    if (!aops || which < 1 || which > 2) return NULL;
    return pipe_get1(&pipes[which], n) ? &pipes[which] : NULL;
}

size_t kumi_accel_pipe_chunk(const struct kumi_accel_pipe *p) { return p->chunk; }

int kumi_accel_pipe_in(struct kumi_accel_pipe *p, void *dst, const void *src, size_t n)
{
    if (p->iss - p->fin >= NSLOT) return 0;
    int k = (int)(p->iss % NSLOT);
    if (n > p->chunk || aops->copy_to_host_async(p->slot[k], src, n, p->stream) ||
        aops->event_record(p->ev[k], p->stream))
        return -1;
    p->jdst[k] = dst;
    p->jlen[k] = n;
    p->iss++;
    return 1;
}

/* the oldest job, whose event is done: finished */
static long long job_finish(struct kumi_accel_pipe *p)
{
    int k = (int)(p->fin % NSLOT);
    if (p->jdst[k]) memcpy(p->jdst[k], p->slot[k], p->jlen[k]);
    p->fin++;
    return (long long)p->jlen[k];
}

long long kumi_accel_pipe_poll(struct kumi_accel_pipe *p)
{
    if (p->fin == p->iss) return 0;
    int q = aops->event_query(p->ev[p->fin % NSLOT]);
    if (q < 0) return -1;
    return q ? job_finish(p) : 0;
}

int kumi_accel_pipe_out(struct kumi_accel_pipe *p, void *dst, const void *src, size_t n)
{
    for (size_t off = 0; off < n;) {
        size_t len = n - off < p->chunk ? n - off : p->chunk;
        if (p->iss - p->fin >= NSLOT) {                       /* the oldest slot's copy must be over */
            if (aops->event_sync(p->ev[p->fin % NSLOT])) return -1;
            job_finish(p);
        }
        int k = (int)(p->iss % NSLOT);
        memcpy(p->slot[k], (const char *)src + off, len);
        if (aops->copy_to_dev_async((char *)dst + off, p->slot[k], len, p->stream) ||
            aops->event_record(p->ev[k], p->stream))
            return -1;
        p->jdst[k] = NULL;
        p->jlen[k] = len;
        p->iss++;
        off += len;
    }
    return 0;
}

int kumi_accel_pipe_drain(struct kumi_accel_pipe *p)
{
    int rc = 0;
    while (p->fin < p->iss) {
        if (aops->event_sync(p->ev[p->fin % NSLOT])) rc = -1;
        job_finish(p);
    }
    return rc;
}

void kumi_accel_pipe_give(struct kumi_accel_pipe *p)
{
    if (!p) return;
    kumi_accel_pipe_drain(p);
    __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
}

/* n bytes device src -> host dst; 0 or -1. */
int kumi_accel_copy_in(void *dst, const void *src, size_t n)
{
    if (!pipe_get(n)) return aops->copy_to_host(dst, src, n);
    size_t c = pl.chunk, issued = 0, done = 0;   /* chunks */
    size_t nch = (n + c - 1) / c;
    int rc = 0;
    while (done < nch && !rc) {
        while (issued < nch && issued - done < NSLOT && !rc) {
            size_t off = issued * c, len = n - off < c ? n - off : c;
            int k = (int)(issued % NSLOT);
            if (aops->copy_to_host_async(pl.slot[k], (const char *)src + off, len, pl.stream) ||
                aops->event_record(pl.ev[k], pl.stream))
                rc = -1;
            issued++;
        }
        if (rc) break;
        size_t off = done * c, len = n - off < c ? n - off : c;
        int k = (int)(done % NSLOT);
        if (aops->event_sync(pl.ev[k])) { rc = -1; break; }
        memcpy((char *)dst + off, pl.slot[k], len);
        done++;
    }
    if (rc) for (size_t i = done; i < issued; i++) aops->event_sync(pl.ev[i % NSLOT]);   /* slots idle again */
    pipe_put();
    return rc;
}

/* n bytes host src -> device dst; 0 or -1. */
int kumi_accel_copy_out(void *dst, const void *src, size_t n)
{
    if (!pipe_get(n)) return aops->copy_to_dev(dst, src, n);
    size_t c = pl.chunk, nch = (n + c - 1) / c;
    int rc = 0;
    for (size_t j = 0; j < nch && !rc; j++) {
        size_t off = j * c, len = n - off < c ? n - off : c;
        int k = (int)(j % NSLOT);
        if (j >= NSLOT && aops->event_sync(pl.ev[k])) { rc = -1; break; }   /* the slot's last copy is over */
        memcpy(pl.slot[k], (const char *)src + off, len);
        if (aops->copy_to_dev_async((char *)dst + off, pl.slot[k], len, pl.stream) ||
            aops->event_record(pl.ev[k], pl.stream))
            rc = -1;
    }
    for (size_t j = nch > NSLOT ? nch - NSLOT : 0; j < nch; j++)    /* everything on the device */
        if (aops->event_sync(pl.ev[j % NSLOT])) rc = -1;
    pipe_put();
    return rc;
}

/* ------------------------------------------------ staging device buffers
 * A buffer in device memory is copied through host memory: the span its
 * count elements of dt touch (true lb .. true ub) is copied whole, so that
 * any datatype works and the gaps of a receive buffer keep their bytes.
 * One pinned buffer of up to KUMI_STAGE_CACHE bytes is kept for reuse. */
#define KUMI_STAGE_CACHE (4u << 20)
bool kumi_accel_on;
static int cache_busy;   /* atomic */

static void span_of(MPI_Count count, const struct kumi_dt *dt, MPI_Aint *lo, size_t *len)
{
    MPI_Aint step = (MPI_Aint)(count - 1) * dt->extent;
    MPI_Aint l = dt->true_lb + (step < 0 ? step : 0);
    MPI_Aint h = dt->true_lb + dt->true_extent + (step > 0 ? step : 0);
    *lo = l;
    *len = h > l ? (size_t)(h - l) : 0;
}

int kumi_stage_begin(const char *fn, struct kumi_stage *s, const void *buf, MPI_Count count, const struct kumi_dt *dt,
                     bool fill)
{
    s->host = NULL;
    s->next = NULL;
    if (!aops || !buf || count <= 0 || !aops->mem_kind || aops->mem_kind(buf) != KUMI_ACCEL_MEM_DEVICE)
        return MPI_SUCCESS;
    MPI_Aint lo;
    size_t len;
    span_of(count, dt, &lo, &len);
    return kumi_stage_span(fn, s, buf, lo, len, fill);
}

int kumi_stage_begin_send(const char *fn, struct kumi_stage *s, const void *buf, MPI_Count count,
                          const struct kumi_dt *dt, bool lazy_ok)
{
    MPI_Aint lo = 0;
    size_t len = 0;
    if (lazy_ok && aops && buf && count > 0) span_of(count, dt, &lo, &len);
    if (len <= KUMI_STAGE_CACHE || !aops->copy_to_host_async || !aops->event_query || accel_chunk <= 0 ||
        !aops->mem_kind || aops->mem_kind(buf) != KUMI_ACCEL_MEM_DEVICE)
        return kumi_stage_begin(fn, s, buf, count, dt, true);
    int rc = kumi_stage_span(fn, s, buf, lo, len, false);
    s->fill = true;
    s->lazy = !rc && s->host;
    return rc;
}

int kumi_stage_span(const char *fn, struct kumi_stage *s, const void *buf, MPI_Aint lo, size_t len, bool fill)
{
    s->host = NULL;
    s->next = NULL;
    if (!aops || !buf || !aops->mem_kind || aops->mem_kind(buf) != KUMI_ACCEL_MEM_DEVICE) return MPI_SUCCESS;
    s->lo = lo;
    s->len = len;
    s->fill = fill;
    s->back = false;
    s->lazy = false;
    s->ondev = 0;
    s->xmem = NULL;
    s->dev = (char *)buf + s->lo;
    s->cached = 0;
    if (s->len <= KUMI_STAGE_CACHE && !__atomic_exchange_n(&cache_busy, 1, __ATOMIC_ACQUIRE)) {
        if (!cache && (!aops->host_alloc || aops->host_alloc(KUMI_STAGE_CACHE, &cache))) cache = NULL;
        if (cache) { s->host = cache; s->cached = 1; }
        else __atomic_store_n(&cache_busy, 0, __ATOMIC_RELEASE);
    }
    if (!s->host && !(s->host = malloc(s->len ? s->len : 1)))
        return kumi_error(MPI_ERR_NO_MEM, "%s: no host memory to stage a device buffer of %zu bytes", fn, s->len);
    if (fill && s->len &&
        (s->cached ? aops->copy_to_host(s->host, s->dev, s->len) : kumi_accel_copy_in(s->host, s->dev, s->len))) {
        kumi_stage_end(s, false);
        return kumi_error(MPI_ERR_OTHER, "%s: accel/%s: copying %zu bytes from the device failed", fn, aname, s->len);
    }
    s->buf = (char *)s->host - s->lo;
    return MPI_SUCCESS;
}

static int end_one(struct kumi_stage *s, bool copy_back)
{
    int rc = 0;
    if (!s->host) return 0;
    size_t o = s->ondev < s->len ? s->ondev : s->len, n = s->len - o;   /* [0, ondev): on the device already */
    if (copy_back && n &&
        (s->cached ? aops->copy_to_dev((char *)s->dev + o, (char *)s->host + o, n)
                   : kumi_accel_copy_out((char *)s->dev + o, (char *)s->host + o, n)))
        rc = kumi_error(MPI_ERR_OTHER, "accel/%s: copying %zu bytes to the device failed", aname, n);
    if (s->cached) __atomic_store_n(&cache_busy, 0, __ATOMIC_RELEASE);
    else free(s->host);
    s->host = NULL;
    free(s->xmem);
    s->xmem = NULL;
    return rc;
}

/* Ends the entries chained to s (copied back if ok and their back flag), frees them. */
static int end_chain(struct kumi_stage *s, bool ok)
{
    int rc = 0;
    for (struct kumi_stage *n = s->next, *nx; n; n = nx) {
        nx = n->next;
        int r = end_one(n, ok && n->back);
        if (!rc) rc = r;
        free(n);
    }
    s->next = NULL;
    return rc;
}

int kumi_stage_end(struct kumi_stage *s, bool copy_back)
{
    end_chain(s, false);
    return end_one(s, copy_back);
}

int kumi_stage_refill(struct kumi_stage *s)
{
    for (; s; s = s->next)
        if (s->host && s->fill && !s->lazy && s->len &&
            (s->cached ? aops->copy_to_host(s->host, s->dev, s->len) : kumi_accel_copy_in(s->host, s->dev, s->len)))
            return kumi_error(MPI_ERR_OTHER, "accel/%s: copying %zu bytes from the device failed", aname, s->len);
    return 0;
}

int kumi_stage_flush(struct kumi_stage *s, size_t first_len)
{
    for (size_t lim = first_len; s; s = s->next, lim = (size_t)-1) {
        size_t n = s->len < lim ? s->len : lim, o = s->ondev < n ? s->ondev : n;   /* [0, ondev): there */
        s->ondev = 0;
        n -= o;
        if (s->host && s->back && n &&
            (s->cached ? aops->copy_to_dev((char *)s->dev + o, (char *)s->host + o, n)
                       : kumi_accel_copy_out((char *)s->dev + o, (char *)s->host + o, n)))
            return kumi_error(MPI_ERR_OTHER, "accel/%s: copying %zu bytes to the device failed", aname, n);
    }
    return 0;
}

int kumi_stage_end_all(struct kumi_stage *s, bool ok)
{
    int rc = end_chain(s, ok);
    int r = end_one(s, ok && s->back);
    return rc ? rc : r;
}

void kumi_accel_warm(void)
{
    if (!aops || !aops->host_alloc) return;
    if (!__atomic_exchange_n(&cache_busy, 1, __ATOMIC_ACQUIRE)) {
        if (!cache && aops->host_alloc(KUMI_STAGE_CACHE, &cache)) cache = NULL;
        __atomic_store_n(&cache_busy, 0, __ATOMIC_RELEASE);
    }
    for (int i = 0; accel_chunk > 0 && i < 3; i++)    /* made (if free), then given back */
        if (pipe_get1(&pipes[i], (size_t)accel_chunk + 1)) __atomic_store_n(&pipes[i].busy, 0, __ATOMIC_RELEASE);
}

bool kumi_accel_is_device(const void *buf)
{
    return aops && buf && aops->mem_kind && aops->mem_kind(buf) == KUMI_ACCEL_MEM_DEVICE;
}

/* ------------------------------------------------ device scratch memory
 * One allocation of device memory, kept from one use to the next (grown to
 * the largest asked for; freed at finalize), for a copy that must stay on
 * the device (MPI_Sendrecv_replace: the message to send; a peer may open it
 * through IPC, and finds it again in its cache of opened handles). */
static void *scratch;
static size_t scratch_len;
static int scratch_busy;      /* atomic */

static bool has_dtod(void)
{
    return aops && aops->hdr.size > offsetof(struct kumi_accel_ops, copy_dtod) && aops->copy_dtod &&
           aops->dev_alloc && aops->dev_free;
}

void *kumi_accel_scratch_take(size_t n)
{
    if (!has_dtod() || !n || __atomic_exchange_n(&scratch_busy, 1, __ATOMIC_ACQUIRE)) return NULL;
    if (scratch_len < n) {
        if (scratch) aops->dev_free(scratch);
        scratch = NULL;
        scratch_len = 0;
        size_t want = (n + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);   /* whole MiB */
        if (aops->dev_alloc(want, &scratch)) {
            scratch = NULL;
            __atomic_store_n(&scratch_busy, 0, __ATOMIC_RELEASE);
            kumi_log(1, "accel/%s: no %zu bytes of device scratch memory", aname, want);
            return NULL;
        }
        scratch_len = want;
    }
    return scratch;
}

void kumi_accel_scratch_give(void *p)
{
    if (p) __atomic_store_n(&scratch_busy, 0, __ATOMIC_RELEASE);
}

static void scratch_fini(void)
{
    if (scratch && aops && aops->dev_free) aops->dev_free(scratch);
    scratch = NULL;
    scratch_len = 0;
    scratch_busy = 0;
}

int kumi_accel_copy_dtod(void *dst, const void *src, size_t n)
{
    return has_dtod() ? aops->copy_dtod(dst, src, n) : -1;
}
