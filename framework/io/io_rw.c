/* MPI-IO data access (MPI-4.1 sec. 14.4): the shared implementations of the
 * read and write families (data/kumi-bindings.json forwards them here; the
 * name of the call tells the positioning, coordination and form), and
 * independent transfers with pread / pwrite. */
#include "io/io.h"
#include "core/check.h"
#include <kumi_impl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------ independent transfers */
/* Reads of small pieces that lie close together are sieved (as ROMIO does):
 * a buffer of up to SIEVE_MAX bytes is read at once and the pieces copied
 * out of it, when the data is at least a quarter of the span it covers. */
#define SIEVE_MAX (4 << 20)
#define SIEVE_PIECE (64 << 10)

struct xfer {
    struct kumi_file *f; int write; unsigned char *buf; MPI_Offset done; bool eof; int err;
    unsigned char *sv; MPI_Offset sv_off, sv_len, sv_cap;     /* the sieve (reads) */
};

static MPI_Offset full(struct xfer *x, int write, unsigned char *p, MPI_Offset len, MPI_Offset off)
{
    MPI_Offset got = 0;
    while (got < len) {
        ssize_t r = write ? pwrite(x->f->fd, p + got, (size_t)(len - got), (off_t)(off + got))
                          : pread(x->f->fd, p + got, (size_t)(len - got), (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            x->err = errno;
            break;
        }
        if (r == 0) { x->eof = true; break; }
        got += r;
    }
    return got;
}

static int xfer_piece(void *arg, MPI_Offset off, MPI_Offset len, MPI_Offset bufoff)
{
    struct xfer *x = arg;
    MPI_Offset got;
    if (x->sv && len <= SIEVE_PIECE) {
        if (off < x->sv_off || off + len > x->sv_off + x->sv_len) {
            if (x->sv_off >= 0 && off >= x->sv_off && x->sv_len < x->sv_cap) {
                got = 0;                /* the last fill ended at the end of the file */
            } else {
                x->sv_off = off;
                x->sv_len = full(x, 0, x->sv, x->sv_cap, off);
                if (x->err) return 1;
                x->eof = false;
            }
        }
        got = x->sv_off + x->sv_len - off;
        if (got > len) got = len;
        if (got < 0) got = 0;
        memcpy(x->buf + bufoff, x->sv + (off - x->sv_off), (size_t)got);
        if (got < len) x->eof = true;
    } else {
        got = full(x, x->write, x->buf + bufoff, len, off);
        if (x->err) return 1;
    }
    x->done += got;
    return got < len ? 1 : 0;
}

static int range_lock(struct kumi_file *f, int type, MPI_Offset lo, MPI_Offset hi)
{
    struct flock l = { .l_type = (short)type, .l_whence = SEEK_SET, .l_start = (off_t)lo, .l_len = (off_t)(hi - lo) };
    while (fcntl(f->fd, F_SETLKW, &l) != 0)
        if (errno != EINTR) return errno;
    return 0;
}

int kumi_io_xfer(struct kumi_file *f, const char *fn, int write, MPI_Offset s, unsigned char *buf, MPI_Offset n,
                 MPI_Offset *done)
{
    *done = 0;
    if (n <= 0) return MPI_SUCCESS;
    MPI_Offset lo = 0, hi = 0;
    if (f->atomic) {
        /* atomic mode: the span of the access under a byte-range lock */
        lo = kumi_io_file_off(f, s);
        hi = kumi_io_file_off(f, s + n - 1) + 1;
        int e = range_lock(f, write ? F_WRLCK : F_RDLCK, lo, hi);
        if (e) return kumi_error(MPI_ERR_IO, "%s: cannot lock bytes %lld..%lld of \"%s\": %s", fn, (long long)lo,
                                 (long long)hi, f->path, strerror(e));
    }
    struct xfer x = { f, write, buf, 0, false, 0, NULL, -1, 0, 0 };
    if (!write && n < kumi_io_file_off(f, s + n - 1) + 1 - kumi_io_file_off(f, s) && f->nblk) {
        MPI_Offset span = kumi_io_file_off(f, s + n - 1) + 1 - kumi_io_file_off(f, s);
        if (n * 4 >= span) {
            x.sv_cap = span < SIEVE_MAX ? span : SIEVE_MAX;
            x.sv = malloc((size_t)x.sv_cap);        /* none: piece by piece */
        }
    }
    kumi_io_pieces(f, s, n, xfer_piece, &x);
    free(x.sv);
    if (f->atomic) range_lock(f, F_UNLCK, lo, hi);
    *done = x.done;
    if (x.err)
        return kumi_error(kumi_io_errno_class(x.err) == MPI_ERR_BAD_FILE ? MPI_ERR_IO : kumi_io_errno_class(x.err),
                          "%s: %s \"%s\": %s", fn, write ? "cannot write" : "cannot read", f->path, strerror(x.err));
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------- the access */
struct done_req { MPI_Status st; };

static int nb_query(void *extra, MPI_Status *st)
{
    struct done_req *d = extra;
    *st = d->st;
    return MPI_SUCCESS;
}
static int nb_free(void *extra) { free(extra); return MPI_SUCCESS; }
static int nb_cancel(void *extra, int complete) { (void)extra; (void)complete; return MPI_SUCCESS; }

static int kind_of(const char *kfn, enum kumi_form form)
{
    int k = 0;
    if (strstr(kfn, "write")) k |= KUMI_IO_WRITE;
    if (strstr(kfn, "_at")) k |= KUMI_IO_AT;
    if (strstr(kfn, "_shared")) k |= KUMI_IO_SHARED;
    if (strstr(kfn, "_ordered")) k |= KUMI_IO_ORDERED | KUMI_IO_COLL;
    if (strstr(kfn, "_all")) k |= KUMI_IO_COLL;
    if (strstr(kfn, "_begin")) k |= KUMI_IO_BEGIN;
    if (form == KUMI_FORM_NB) k |= KUMI_IO_NB;
    return k;
}

static void set_status(MPI_Status *st, MPI_Offset ubytes)
{
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
    kumi_status_set_bytes(st, (uint64_t)ubytes);
    st->MPI_internal[2] = 0;
}

/* The ordered forms: this rank's place after the ranks below it. */
static int ordered_start(struct kumi_file *f, const char *fn, MPI_Offset mine, MPI_Offset *start)
{
    int64_t v = mine, pre = 0, tot = mine;
    int rc = kumi_coll_exscan(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, &v, &pre, 1, kumi_dt_get(MPI_INT64_T),
                              kumi_op_get(MPI_SUM), f->comm);
    if (!rc) rc = kumi_coll_allreduce(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, MPI_IN_PLACE, &tot, 1,
                                      kumi_dt_get(MPI_INT64_T), kumi_op_get(MPI_SUM), f->comm);
    if (rc) return rc;
    if (f->rank == 0) pre = 0;
    int64_t base = 0;
    if (f->rank == 0) rc = kumi_io_shared_fetch_add(f, fn, tot, &base);
    /* every rank learns base (and whether rank 0 failed) */
    int64_t b[2] = { rc ? -1 : base, rc ? (rc & 0x3fff) : 0 };
    int brc = kumi_coll_bcast(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, b, 2, kumi_dt_get(MPI_INT64_T), 0, f->comm);
    if (rc) return rc;
    if (brc) return brc;
    if (b[1]) return kumi_error((int)b[1], "%s: the shared file pointer failed on rank 0", fn);
    *start = b[0] + pre;
    return MPI_SUCCESS;
}

static int io_access(const char *kfn, enum kumi_form form, struct kumi_file *f, MPI_Offset offset, void *buf,
                     MPI_Count count, struct kumi_dt *dt, MPI_Status *status, MPI_Request *request)
{
    int k = kind_of(kfn, form);
    int wr = k & KUMI_IO_WRITE, coll = k & KUMI_IO_COLL;
    int rc = MPI_SUCCESS;
    if (wr && (f->amode & MPI_MODE_RDONLY))
        rc = kumi_error(MPI_ERR_ACCESS, "%s: the file was opened MPI_MODE_RDONLY", kfn);
    else if (!wr && (f->amode & MPI_MODE_WRONLY))
        rc = kumi_error(MPI_ERR_ACCESS, "%s: the file was opened MPI_MODE_WRONLY", kfn);
    else if ((f->amode & MPI_MODE_SEQUENTIAL) && !(k & (KUMI_IO_SHARED | KUMI_IO_ORDERED)))
        rc = kumi_error(MPI_ERR_UNSUPPORTED_OPERATION, "%s: only shared file pointer calls are allowed on a file "
                        "opened MPI_MODE_SEQUENTIAL", kfn);
    else if (count < 0)
        rc = kumi_error(MPI_ERR_COUNT, "%s: invalid count %lld (argument count)", kfn, (long long)count);
    else if ((k & KUMI_IO_AT) && offset < 0)
        rc = kumi_error(MPI_ERR_ARG, "%s: offset %lld (argument offset) is negative", kfn, (long long)offset);
    else if ((k & KUMI_IO_BEGIN) && f->split)
        rc = kumi_error(MPI_ERR_OTHER, "%s: a split collective is already in progress on the file", kfn);
    MPI_Offset n = rc ? 0 : kumi_io_stream_len(f, dt, count);
    if (!rc && n < 0)
        rc = kumi_error(MPI_ERR_UNSUPPORTED_DATAREP, "%s: datarep \"%s\" cannot size datatype %s", kfn, f->datarep,
                        kumi_dt_name(dt));
    if (!rc && n % f->esize)
        rc = kumi_error(MPI_ERR_TYPE, "%s: %lld elements of %s (arguments count, datatype) are not a whole number "
                        "of etypes %s", kfn, (long long)count, kumi_dt_name(dt), kumi_dt_name(f->etype));
    if (rc && !coll) return rc;

    /* where the access starts in the stream (a rank that failed still takes
     * part in the ordered forms' collectives, with nothing) */
    MPI_Offset s = 0;
    if (k & KUMI_IO_ORDERED) {
        int orc = ordered_start(f, kfn, rc ? 0 : n / f->esize, &s);
        if (!rc) rc = orc;
        s *= f->esize;
    } else if (!rc) {
        if (k & KUMI_IO_AT) s = offset * f->esize;
        else if (k & KUMI_IO_SHARED) { rc = kumi_io_shared_fetch_add(f, kfn, n / f->esize, &s); s *= f->esize; }
        else s = f->fp * f->esize;
    }
    /* the buffer in the file's representation */
    unsigned char *fbuf = NULL;
    bool direct = (f->rep == KUMI_REP_NATIVE || f->rep == KUMI_REP_INTERNAL) && dt->contig;
    if (!rc) {
        if (direct) fbuf = (unsigned char *)buf + dt->true_lb;
        else if (!(fbuf = malloc(n ? (size_t)n : 1))) rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", kfn);
        else if (wr) rc = kumi_io_convert(f, kfn, 0, buf, count, dt, fbuf, n);
    }
    MPI_Offset done = 0;
    if (coll && !(k & KUMI_IO_ORDERED)) {
        /* a rank that failed still takes part (with nothing), so that the others do not wait */
        int xrc = kumi_io_xfer_all(f, kfn, wr, rc ? 0 : s, rc ? NULL : fbuf, rc ? 0 : n, &done);
        if (!rc) rc = xrc;
    } else if (!rc) {
        rc = kumi_io_xfer(f, kfn, wr, s, fbuf, n, &done);
    }
    if (!rc && !wr && !direct) rc = kumi_io_convert(f, kfn, 1, buf, count, dt, fbuf, done);
    if (!direct) free(fbuf);
    if (rc) return rc;

    /* pointers and status: the user's bytes moved */
    if (!(k & (KUMI_IO_AT | KUMI_IO_SHARED | KUMI_IO_ORDERED))) f->fp += (wr ? n : done) / f->esize;
    MPI_Offset per = kumi_io_stream_len(f, dt, 1);
    MPI_Offset ubytes = n == done ? (MPI_Offset)((size_t)count * dt->size)
                        : (f->rep == KUMI_REP_NATIVE || f->rep == KUMI_REP_INTERNAL) ? done
                        : per > 0 ? (done / per) * (MPI_Offset)dt->size : 0;
    if (k & KUMI_IO_NB) {
        struct done_req *d = calloc(1, sizeof *d);
        if (!d) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", kfn);
        set_status(&d->st, ubytes);
        rc = kumi_mpi_grequest_start(nb_query, nb_free, nb_cancel, d, request);
        if (rc) { free(d); return rc; }
        return kumi_mpi_grequest_complete(*request);
    }
    if (k & KUMI_IO_BEGIN) {
        f->split = k & ~KUMI_IO_BEGIN;
        f->split_buf = buf;
        set_status(&f->split_status, ubytes);
        return MPI_SUCCESS;
    }
    set_status(status, ubytes);
    return MPI_SUCCESS;
}

int kumi_io_read(const char *kfn, enum kumi_form form, struct kumi_file *fh, void *buf, MPI_Count count,
                 struct kumi_dt *datatype, MPI_Status *status, MPI_Request *request)
{
    return io_access(kfn, form, fh, 0, buf, count, datatype, status, request);
}

int kumi_io_read_at(const char *kfn, enum kumi_form form, struct kumi_file *fh, MPI_Offset offset, void *buf,
                    MPI_Count count, struct kumi_dt *datatype, MPI_Status *status, MPI_Request *request)
{
    return io_access(kfn, form, fh, offset, buf, count, datatype, status, request);
}

int kumi_io_write(const char *kfn, enum kumi_form form, struct kumi_file *fh, const void *buf, MPI_Count count,
                  struct kumi_dt *datatype, MPI_Status *status, MPI_Request *request)
{
    return io_access(kfn, form, fh, 0, (void *)buf, count, datatype, status, request);
}

int kumi_io_write_at(const char *kfn, enum kumi_form form, struct kumi_file *fh, MPI_Offset offset, const void *buf,
                     MPI_Count count, struct kumi_dt *datatype, MPI_Status *status, MPI_Request *request)
{
    return io_access(kfn, form, fh, offset, (void *)buf, count, datatype, status, request);
}

/* MPI_File_{read,write}_{all,at_all,ordered}_end */
static int split_end(const char *kfn, struct kumi_file *f, const void *buf, MPI_Status *status)
{
    int want = kind_of(kfn, KUMI_FORM_BLOCKING) & ~KUMI_IO_BEGIN;
    if (!f->split)
        return kumi_error(MPI_ERR_OTHER, "%s: no split collective was begun on the file", kfn);
    if (f->split != want)
        return kumi_error(MPI_ERR_OTHER, "%s: the split collective in progress is another kind", kfn);
    if (buf != f->split_buf)
        return kumi_error(MPI_ERR_BUFFER, "%s: argument buf is not the buffer passed to the _begin call", kfn);
    f->split = 0;
    if (status != MPI_STATUS_IGNORE) *status = f->split_status;
    return MPI_SUCCESS;
}

int kumi_io_read_end(const char *kfn, struct kumi_file *fh, void *buf, MPI_Status *status)
{
    return split_end(kfn, fh, buf, status);
}

int kumi_io_write_end(const char *kfn, struct kumi_file *fh, const void *buf, MPI_Status *status)
{
    return split_end(kfn, fh, buf, status);
}
