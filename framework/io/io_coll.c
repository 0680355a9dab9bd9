/* Collective I/O by two-phase aggregation (MPI_File_{read,write}{_at,}_all
 * and their split and non-blocking forms).
 *
 * The ranks agree on the span [gmin, gmax) of the file that the call
 * touches; when no rank has more than one contiguous piece, or when every
 * rank's pieces are large (KUMI_IO_CB_PIECE on average; hints romio_cb_read
 * and romio_cb_write), every rank does its own transfer.  Otherwise the span is cut into one contiguous file
 * domain per aggregator (hint cb_nodes, default the first rank of each host;
 * domains aligned to striping_unit when it is given), and each domain is
 * processed in windows of cb_buffer_size bytes.  Each rank sends each
 * aggregator the list of its pieces in that aggregator's domain once; then,
 * window by window, one all-to-all moves the data: a rank's bytes for one
 * window are one contiguous range of its stream buffer (the view maps the
 * stream to non-decreasing file offsets), so nothing is copied on the ranks'
 * side.  A writing aggregator reads the window's span first when the pieces
 * leave holes in it (read-modify-write), places the pieces and writes the
 * span with one pwrite; a reading aggregator reads the span with one pread
 * and sends each rank its pieces. */
#include "io/io.h"
#include "core/check.h"
#include <kumi_impl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

struct piece { MPI_Offset off, len, pos; };   /* pos: in the stream buffer, or in the received data */
struct plist { struct piece *v; size_t n, cap; bool nomem; };

static int push(struct plist *l, MPI_Offset off, MPI_Offset len, MPI_Offset pos)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        struct piece *t = realloc(l->v, nc * sizeof *t);
        if (!t) { l->nomem = true; return 1; }
        l->v = t; l->cap = nc;
    }
    l->v[l->n++] = (struct piece){ off, len, pos };
    return 0;
}

static int collect(void *arg, MPI_Offset off, MPI_Offset len, MPI_Offset bufoff)
{
    return push(arg, off, len, bufoff);
}

/* The pieces of v[*cur..] inside [w0, w1), clipped, appended to out (pos
 * adjusted) when out is given; returns their bytes, *first the pos of the
 * first.  *cur moves past the pieces that end by w1. */
static MPI_Offset clip(const struct piece *v, size_t n, size_t *cur, MPI_Offset w0, MPI_Offset w1, struct plist *out,
                       MPI_Offset *first)
{
    size_t i = *cur;
    MPI_Offset bytes = 0;
    *first = -1;
    while (i < n && v[i].off + v[i].len <= w0) i++;
    *cur = i;
    for (size_t j = i; j < n && v[j].off < w1; j++) {
        MPI_Offset lo = v[j].off > w0 ? v[j].off : w0;
        MPI_Offset hi = v[j].off + v[j].len < w1 ? v[j].off + v[j].len : w1;
        if (hi <= lo) continue;
        if (*first < 0) *first = v[j].pos + (lo - v[j].off);
        if (out) push(out, lo, hi - lo, v[j].pos + (lo - v[j].off));
        bytes += hi - lo;
    }
    while (*cur < n && v[*cur].off + v[*cur].len <= w1) (*cur)++;
    return bytes;
}

static int by_off(const void *a, const void *b)
{
    MPI_Offset x = ((const struct piece *)a)->off, y = ((const struct piece *)b)->off;
    return x < y ? -1 : x > y;
}

static int full_io(int write, int fd, unsigned char *p, MPI_Offset len, MPI_Offset off, MPI_Offset *got)
{
    MPI_Offset d = 0;
    while (d < len) {
        ssize_t r = write ? pwrite(fd, p + d, (size_t)(len - d), (off_t)(off + d))
                          : pread(fd, p + d, (size_t)(len - d), (off_t)(off + d));
        if (r < 0) { if (errno == EINTR) continue; return errno; }
        if (r == 0) break;
        d += r;
    }
    if (got) *got = d;
    return 0;
}

/* pwritev of n pieces that follow one another in the file from off on
 * (iov is consumed). */
static int full_iov(int fd, struct iovec *iov, size_t n, MPI_Offset off, MPI_Offset *got)
{
    MPI_Offset d = 0;
    size_t i = 0;
    while (i < n) {
        int c = n - i > IOV_MAX ? IOV_MAX : (int)(n - i);
        ssize_t r = pwritev(fd, iov + i, c, (off_t)(off + d));
        if (r < 0) { if (errno == EINTR) continue; return errno; }
        if (r == 0) break;
        d += r;
        while (i < n && (size_t)r >= iov[i].iov_len) r -= (ssize_t)iov[i++].iov_len;
        if (r > 0) { iov[i].iov_base = (char *)iov[i].iov_base + r; iov[i].iov_len -= (size_t)r; }
    }
    if (got) *got = d;
    return 0;
}

/* A pread / pwrite of one window (or a pwritev of its pieces, niov > 0) in a
 * thread of its own, so that the aggregator's disk work overlaps the next
 * window's exchange (the thread calls nothing of MPI).  Where no thread can
 * be made it runs inline. */
struct job {
    pthread_t th; bool active; int fd, write, err; unsigned char *p; MPI_Offset len, off, got;
    struct iovec *iov; size_t niov, iovcap;
};

static void *job_main(void *a)
{
    struct job *j = a;
    if (j->niov) j->err = full_iov(j->fd, j->iov, j->niov, j->off, &j->got);
    else j->err = full_io(j->write, j->fd, j->p, j->len, j->off, &j->got);
    return NULL;
}

static void job_start(struct job *j, int fd, int write, unsigned char *p, MPI_Offset len, MPI_Offset off)
{
    if (p) j->niov = 0;
    j->fd = fd; j->write = write; j->p = p; j->len = len; j->off = off; j->got = 0; j->err = 0;
    j->active = pthread_create(&j->th, NULL, job_main, j) == 0;
    if (!j->active) job_main(j);
}

static int job_wait(struct job *j)
{
    if (j->active) { pthread_join(j->th, NULL); j->active = false; }
    int e = j->err;
    j->err = 0;
    return e;
}

static int grow(unsigned char **b, MPI_Offset *cap, MPI_Offset need, MPI_Offset dflt)
{
    if (*b && need <= *cap) return 0;
    free(*b);
    *cap = need > dflt ? need : dflt;
    return (*b = malloc((size_t)*cap)) ? 0 : -1;
}

int kumi_io_xfer_all(struct kumi_file *f, const char *fn, int write, MPI_Offset s, unsigned char *buf, MPI_Offset n,
                     MPI_Offset *done)
{
    struct kumi_dt *i64 = kumi_dt_get(MPI_INT64_T), *byte = kumi_dt_get(MPI_BYTE);
    struct plist my = { 0 };
    *done = 0;
    if (n > 0) kumi_io_pieces(f, s, n, collect, &my);
    /* g[4]: the smallest average piece of a rank that has pieces */
    int64_t g[5] = { my.n ? my.v[0].off : INT64_MAX, my.n ? -(my.v[my.n - 1].off + my.v[my.n - 1].len) : INT64_MAX,
                     -(int64_t)my.n, my.nomem ? 0 : 1, my.n ? n / (int64_t)my.n : INT64_MAX };
    int rc = kumi_coll_allreduce(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, MPI_IN_PLACE, g, 5, i64,
                                 kumi_op_get(MPI_MIN), f->comm);
    if (rc || !g[3]) {
        free(my.v);
        return rc ? rc : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (on some rank)", fn);
    }
    if (g[0] == INT64_MAX) { free(my.v); return MPI_SUCCESS; }
    MPI_Offset gmin = g[0], gmax = -g[1];
    int hint = write ? f->cb_write : f->cb_read;
    if (-g[2] <= 1 || hint == KUMI_IO_CB_DISABLE || (hint == KUMI_IO_CB_AUTO && g[4] >= KUMI_IO_CB_PIECE)) {
        /* one contiguous piece per rank at most, or large pieces (aggregation
         * would only add copies and funnel every byte through the
         * aggregators): each rank moves its own */
        free(my.v);
        return kumi_io_xfer(f, fn, write, s, buf, n, done);
    }

    int P = f->size, na = f->naggr, me = -1;
    for (int a = 0; a < na; a++) if (f->aggr[a] == f->rank) me = a;
    MPI_Offset su = f->striping_unit, cbs = f->cb_buffer_size;
    MPI_Offset base = su > 0 ? gmin - gmin % su : gmin;
    MPI_Offset dsize = (gmax - base + na - 1) / na;
    if (su > 0) dsize = (dsize + su - 1) / su * su;
    if (dsize <= 0) dsize = 1;
    MPI_Offset rounds = (dsize + cbs - 1) / cbs;
    MPI_Offset cap0 = cbs < dsize ? cbs : dsize;      /* the window buffers' first size */

    /* my pieces per aggregator domain, and the lists the aggregators get */
    struct plist *mine = calloc((size_t)na, sizeof *mine);
    MPI_Count *scnt = calloc((size_t)P * 4, sizeof *scnt);
    MPI_Aint *sdsp = calloc((size_t)P * 2, sizeof *sdsp);
    struct plist *theirs = calloc((size_t)P, sizeof *theirs);
    int64_t *cnt_out = calloc((size_t)P * 2, sizeof *cnt_out);
    size_t *cur = calloc((size_t)na + (size_t)P, sizeof *cur);
    int64_t *meta_out = NULL, *meta_in = NULL;
    unsigned char *tb[2] = { NULL, NULL }, *wb[2] = { NULL, NULL };
    MPI_Offset tcap[2] = { 0, 0 }, wcap[2] = { 0, 0 }, *slo = NULL, *shi = NULL;
    struct job jobs[2];
    memset(jobs, 0, sizeof jobs);
    struct plist wl = { 0 };
    if (!mine || !scnt || !sdsp || !theirs || !cnt_out || !cur) goto nomem;
    MPI_Count *rcnt = scnt + (size_t)P, *mcnt = scnt + 2 * (size_t)P, *mrcnt = scnt + 3 * (size_t)P;
    MPI_Aint *rdsp = sdsp + (size_t)P;
    int64_t *cnt_in = cnt_out + (size_t)P;
    for (int a = 0; a < na; a++) {
        MPI_Offset lo = base + a * dsize, hi = lo + dsize, first;
        size_t c = 0;
        clip(my.v, my.n, &c, lo, hi, &mine[a], &first);
        if (mine[a].nomem) goto nomem;
        cnt_out[f->aggr[a]] = (int64_t)mine[a].n;
    }
    rc = kumi_coll_alltoall(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, cnt_out, 1, i64, cnt_in, 1, i64, f->comm);
    if (rc) goto out;
    size_t nout = 0, nin = 0;
    for (int a = 0; a < na; a++) nout += mine[a].n;
    for (int r = 0; r < P; r++) nin += (size_t)cnt_in[r];
    meta_out = malloc((nout ? nout : 1) * 16);
    meta_in = malloc((nin ? nin : 1) * 16);
    if (!meta_out || !meta_in) goto nomem;
    {
        size_t k = 0;
        for (int r = 0; r < P; r++) { mcnt[r] = 0; sdsp[r] = 0; }
        for (int a = 0; a < na; a++) {
            sdsp[f->aggr[a]] = (MPI_Aint)(k * 16);
            mcnt[f->aggr[a]] = (MPI_Count)(mine[a].n * 16);
            for (size_t i = 0; i < mine[a].n; i++) {
                meta_out[2 * k] = mine[a].v[i].off;
                meta_out[2 * k + 1] = mine[a].v[i].len;
                k++;
            }
        }
        size_t q = 0;
        for (int r = 0; r < P; r++) { rdsp[r] = (MPI_Aint)(q * 16); mrcnt[r] = cnt_in[r] * 16; q += (size_t)cnt_in[r]; }
    }
    rc = kumi_coll_alltoallv(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, true, meta_out, mcnt, sdsp, byte, meta_in,
                             mrcnt, rdsp, byte, f->comm);
    if (rc) goto out;
    if (me >= 0) {
        size_t q = 0;
        for (int r = 0; r < P; r++)
            for (int64_t i = 0; i < cnt_in[r]; i++, q++)
                if (push(&theirs[r], meta_in[2 * q], meta_in[2 * q + 1], 0)) goto nomem;
    }
    free(meta_out); meta_out = NULL;
    free(meta_in); meta_in = NULL;

    size_t *mcur = cur, *tcur = cur + na;
    int ioerr = 0;
    if (!write && me >= 0 && rounds > 0) {
        /* reads: the span of every window, so that the next one is read ahead */
        slo = calloc((size_t)rounds * 2, sizeof *slo);
        size_t *c2 = calloc((size_t)P, sizeof *c2);
        if (!slo || !c2) { free(c2); goto nomem; }
        shi = slo + rounds;
        for (MPI_Offset rd = 0; rd < rounds; rd++) {
            MPI_Offset w0 = base + me * dsize + rd * cbs, w1 = w0 + cbs, first;
            if (w1 > base + (me + 1) * dsize) w1 = base + (me + 1) * dsize;
            wl.n = 0;
            for (int r = 0; r < P; r++) clip(theirs[r].v, theirs[r].n, &c2[r], w0, w1, &wl, &first);
            if (wl.nomem) { free(c2); goto nomem; }
            for (size_t i = 0; i < wl.n; i++) {
                if (i == 0 || wl.v[i].off < slo[rd]) slo[rd] = wl.v[i].off;
                if (wl.v[i].off + wl.v[i].len > shi[rd]) shi[rd] = wl.v[i].off + wl.v[i].len;
            }
        }
        free(c2);
        if (shi[0] > slo[0]) {
            if (grow(&wb[0], &wcap[0], shi[0] - slo[0], cap0)) goto nomem;
            job_start(&jobs[0], f->fd, 0, wb[0], shi[0] - slo[0], slo[0]);
        }
    }
    for (MPI_Offset rd = 0; rd < rounds; rd++) {
        /* what I exchange with each aggregator in this window */
        for (int r = 0; r < P; r++) { scnt[r] = 0; sdsp[r] = 0; rcnt[r] = 0; rdsp[r] = 0; }
        for (int a = 0; a < na; a++) {
            MPI_Offset w0 = base + a * dsize + rd * cbs, w1 = w0 + cbs, first;
            if (w1 > base + (a + 1) * dsize) w1 = base + (a + 1) * dsize;
            MPI_Offset b = clip(mine[a].v, mine[a].n, &mcur[a], w0, w1, NULL, &first);
            scnt[f->aggr[a]] = b;
            sdsp[f->aggr[a]] = b ? (MPI_Aint)first : 0;
        }
        /* an aggregator: the pieces of every rank in its window */
        MPI_Offset tot = 0, lo = 0, hi = 0;
        int cb = (int)(rd & 1);
        wl.n = 0;
        if (me >= 0) {
            MPI_Offset w0 = base + me * dsize + rd * cbs, w1 = w0 + cbs, first;
            if (w1 > base + (me + 1) * dsize) w1 = base + (me + 1) * dsize;
            for (int r = 0; r < P; r++) {
                size_t from = wl.n;
                MPI_Offset b = clip(theirs[r].v, theirs[r].n, &tcur[r], w0, w1, &wl, &first);
                if (wl.nomem) goto nomem;
                for (size_t i = from; i < wl.n; i++) {   /* pos: where its bytes arrive */
                    wl.v[i].pos = tot;
                    tot += wl.v[i].len;
                }
                rcnt[r] = b;
                rdsp[r] = (MPI_Aint)(tot - b);
            }
            if (wl.n) {
                lo = wl.v[0].off; hi = 0;
                for (size_t i = 0; i < wl.n; i++) {
                    if (wl.v[i].off < lo) lo = wl.v[i].off;
                    if (wl.v[i].off + wl.v[i].len > hi) hi = wl.v[i].off + wl.v[i].len;
                }
            }
            /* the buffers grow as needed and serve every window; a writing
             * aggregator receives window rd into tb[rd & 1], which the
             * write of two windows ago may still be writing from */
            if (write) {
                int e = job_wait(&jobs[cb]);
                if (e && !ioerr) ioerr = e;
            }
            if (grow(&tb[write ? cb : 0], &tcap[write ? cb : 0], tot, cap0)) goto nomem;
        }
        if (write) {
            unsigned char *rb = tb[cb];
            rc = kumi_coll_alltoallv(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, true, buf, scnt, sdsp, byte, rb,
                                     rcnt, rdsp, byte, f->comm);
            if (rc) goto out;
            if (me >= 0 && wl.n) {
                qsort(wl.v, wl.n, sizeof *wl.v, by_off);
                MPI_Offset covered = 0, reach = lo;
                bool tiled = true;                   /* each piece starts where the one before ends */
                for (size_t i = 0; i < wl.n; i++) {
                    MPI_Offset a0 = wl.v[i].off > reach ? wl.v[i].off : reach, a1 = wl.v[i].off + wl.v[i].len;
                    if (wl.v[i].off != reach) tiled = false;
                    if (a1 > a0) { covered += a1 - a0; reach = a1; }
                }
                if (tiled && !ioerr) {
                    /* the pieces fill [lo, hi) exactly: one pwritev of them
                     * where they arrived (those of a rank that follow one
                     * another in the file are one) */
                    struct job *j = &jobs[cb];
                    if (j->iovcap < wl.n) {
                        struct iovec *t = realloc(j->iov, wl.n * sizeof *t);
                        if (!t) goto nomem;
                        j->iov = t;
                        j->iovcap = wl.n;
                    }
                    size_t k = 0;
                    for (size_t i = 0; i < wl.n; i++) {
                        unsigned char *p = rb + wl.v[i].pos;
                        if (k && (unsigned char *)j->iov[k - 1].iov_base + j->iov[k - 1].iov_len == p)
                            j->iov[k - 1].iov_len += (size_t)wl.v[i].len;
                        else j->iov[k++] = (struct iovec){ p, (size_t)wl.v[i].len };
                    }
                    j->niov = k;
                    job_start(j, f->fd, 1, NULL, hi - lo, lo);
                    continue;
                }
                if (grow(&wb[cb], &wcap[cb], hi - lo, cap0)) goto nomem;
                unsigned char *win = wb[cb];
                /* holes in [lo, hi): read it first */
                if (covered < hi - lo && !ioerr) {
                    MPI_Offset got = 0;
                    ioerr = full_io(0, f->fd, win, hi - lo, lo, &got);
                    if (!ioerr && got < hi - lo) memset(win + got, 0, (size_t)(hi - lo - got));
                }
                for (size_t i = 0; i < wl.n; i++)
                    memcpy(win + (wl.v[i].off - lo), rb + wl.v[i].pos, (size_t)wl.v[i].len);
                if (!ioerr) job_start(&jobs[cb], f->fd, 1, win, hi - lo, lo);
            }
        } else {
            unsigned char *tmp = tb[0];
            if (me >= 0 && wl.n) {
                int e = job_wait(&jobs[cb]);         /* this window, read ahead */
                if (e && !ioerr) ioerr = e;
                if (jobs[cb].got < hi - lo) memset(wb[cb] + jobs[cb].got, 0, (size_t)(hi - lo - jobs[cb].got));
            }
            if (me >= 0 && rd + 1 < rounds && shi[rd + 1] > slo[rd + 1] && !ioerr) {
                if (grow(&wb[1 - cb], &wcap[1 - cb], shi[rd + 1] - slo[rd + 1], cap0)) goto nomem;
                job_start(&jobs[1 - cb], f->fd, 0, wb[1 - cb], shi[rd + 1] - slo[rd + 1], slo[rd + 1]);
            }
            if (me >= 0 && wl.n)
                for (size_t i = 0; i < wl.n; i++)
                    memcpy(tmp + wl.v[i].pos, wb[cb] + (wl.v[i].off - lo), (size_t)wl.v[i].len);
            rc = kumi_coll_alltoallv(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, true, tmp, rcnt, rdsp, byte, buf,
                                     scnt, sdsp, byte, f->comm);
            if (rc) goto out;
        }
    }
    for (int j = 0; j < 2; j++) {
        int e = job_wait(&jobs[j]);
        if (e && !ioerr) ioerr = e;
    }
    /* every rank learns whether an aggregator failed */
    {
        int64_t e = ioerr;
        rc = kumi_coll_allreduce(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, MPI_IN_PLACE, &e, 1, i64,
                                 kumi_op_get(MPI_MAX), f->comm);
        if (!rc && e) {
            rc = kumi_error(kumi_io_errno_class((int)e) == MPI_ERR_BAD_FILE ? MPI_ERR_IO : kumi_io_errno_class((int)e),
                            "%s: %s \"%s\": %s", fn, write ? "cannot write" : "cannot read", f->path, strerror((int)e));
        }
    }
    if (!rc) {
        if (write) *done = n;
        else {
            struct stat st;
            MPI_Offset avail = fstat(f->fd, &st) == 0 ? kumi_io_stream_before(f, st.st_size) - s : n;
            *done = avail < 0 ? 0 : avail > n ? n : avail;
        }
    }
    goto out;
nomem:
    rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
out:
    for (int j = 0; j < 2; j++) { job_wait(&jobs[j]); free(jobs[j].iov); }
    if (mine) for (int a = 0; a < na; a++) free(mine[a].v);
    if (theirs) for (int r = 0; r < P; r++) free(theirs[r].v);
    free(mine); free(theirs); free(scnt); free(sdsp); free(cnt_out); free(cur);
    free(meta_out); free(meta_in); free(tb[0]); free(tb[1]); free(wb[0]); free(wb[1]); free(slo); free(wl.v); free(my.v);
    return rc;
}
