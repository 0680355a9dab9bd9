/* MPI-IO file objects (MPI-4.1 sec. 14.2, 14.3, 14.5, 14.6, 14.7): open,
 * close, delete, size, preallocate, group / amode / info, views, data
 * representations, offsets, the file pointers, atomicity, sync and error
 * handlers.  See io.h for the design. */
#include "io/io.h"
#include "core/check.h"
#include "rma/rma.h"
#include "mpi/mpi_front.h"
#include <kumi_impl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CB_BUFFER_DEFAULT (16 << 20)

static struct kumi_errhandler *null_errh;       /* MPI_FILE_NULL's handler */
static struct kumi_datarep *datareps;           /* MPI_Register_datarep */

static struct kumi_errhandler *file_null_errh(void)
{
    if (!null_errh) null_errh = kumi_errh_get(MPI_ERRORS_RETURN);
    return null_errh;
}

int kumi_file_err_handle(struct kumi_file *f, int code)
{
    if (code == MPI_SUCCESS) return code;
    code = kumi_err_in(code, kumi_call);
    if (f && f->errh) return kumi_errh_invoke(f->errh, KUMI_ERRH_OBJ_FILE, f->handle, code);
    return kumi_errh_invoke(file_null_errh(), KUMI_ERRH_OBJ_FILE, MPI_FILE_NULL, code);
}

int kumi_io_errno_class(int e)
{
    switch (e) {
    case ENOENT: return MPI_ERR_NO_SUCH_FILE;
    case EEXIST: return MPI_ERR_FILE_EXISTS;
    case EACCES: case EPERM: return MPI_ERR_ACCESS;
    case EROFS: return MPI_ERR_READ_ONLY;
    case ENOSPC: case EFBIG: return MPI_ERR_NO_SPACE;
    case EDQUOT: return MPI_ERR_QUOTA;
    case ENAMETOOLONG: case ENOTDIR: case EISDIR: case ELOOP: case EINVAL: return MPI_ERR_BAD_FILE;
    case ENOMEM: return MPI_ERR_NO_MEM;
    default: return MPI_ERR_IO;
    }
}

static int sys_error(const char *fn, const char *what, const char *path, int e)
{
    return kumi_error(kumi_io_errno_class(e), "%s: %s %s%s%s: %s", fn, what, path ? "\"" : "", path ? path : "",
                      path ? "\"" : "", strerror(e));
}

/* ------------------------------------------------- collective helpers */
static int allreduce_i64(struct kumi_comm *c, const char *fn, int64_t *v, int n, MPI_Op op)
{
    return kumi_coll_allreduce(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, MPI_IN_PLACE, v, n,
                               kumi_dt_get(MPI_INT64_T), kumi_op_get(op), c);
}

static int barrier(struct kumi_comm *c, const char *fn)
{
    return kumi_coll_barrier(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, c);
}

/* Every rank learns whether some rank failed (rc: this rank's error): the
 * lowest failing class is returned on every rank (its own error where it failed). */
static int agree(struct kumi_comm *c, const char *fn, int rc)
{
    int64_t v = rc ? (rc & 0x3fff) : INT64_MAX;
    int arc = allreduce_i64(c, fn, &v, 1, MPI_MIN);
    if (rc) return rc;
    if (arc) return arc;
    if (v != INT64_MAX)
        return kumi_error((int)v, "%s: failed on another rank of the communicator", fn);
    return MPI_SUCCESS;
}

/* -------------------------------------------------------------- hints */
static MPI_Offset hint_size(const char *v, MPI_Offset dflt)
{
    if (!v) return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || x <= 0) return dflt;
    return x;
}

static int set_hints(struct kumi_file *f, struct kumi_info *in)
{
    if (in) {
        f->cb_buffer_size = hint_size(kumi_info_value(in, "cb_buffer_size"), f->cb_buffer_size);
        MPI_Offset n = hint_size(kumi_info_value(in, "cb_nodes"), 0);
        if (n > 0) f->cb_nodes = (int)(n > f->size ? f->size : n);
        f->striping_unit = hint_size(kumi_info_value(in, "striping_unit"), f->striping_unit);
        const char *cr = kumi_info_value(in, "romio_cb_read");
        if (cr && !strcmp(cr, "enable")) f->cb_read = KUMI_IO_CB_ENABLE;
        else if (cr && !strcmp(cr, "disable")) f->cb_read = KUMI_IO_CB_DISABLE;
        else if (cr && !strcmp(cr, "automatic")) f->cb_read = KUMI_IO_CB_AUTO;
        const char *cw = kumi_info_value(in, "romio_cb_write");
        if (cw && !strcmp(cw, "enable")) f->cb_write = KUMI_IO_CB_ENABLE;
        else if (cw && !strcmp(cw, "disable")) f->cb_write = KUMI_IO_CB_DISABLE;
        else if (cw && !strcmp(cw, "automatic")) f->cb_write = KUMI_IO_CB_AUTO;
    }
    struct kumi_info *i = kumi_info_dup(NULL);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "out of memory");
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)f->cb_buffer_size);
    kumi_info_set_value(i, "cb_buffer_size", b);
    snprintf(b, sizeof b, "%d", f->cb_nodes);
    kumi_info_set_value(i, "cb_nodes", b);
    if (f->striping_unit > 0) {
        snprintf(b, sizeof b, "%lld", (long long)f->striping_unit);
        kumi_info_set_value(i, "striping_unit", b);
    }
    kumi_info_set_value(i, "romio_cb_write", f->cb_write == KUMI_IO_CB_ENABLE ? "enable"
                                             : f->cb_write == KUMI_IO_CB_DISABLE ? "disable" : "automatic");
    kumi_info_set_value(i, "romio_cb_read", f->cb_read == KUMI_IO_CB_ENABLE ? "enable"
                                            : f->cb_read == KUMI_IO_CB_DISABLE ? "disable" : "automatic");
    kumi_info_release(f->info);
    f->info = i;
    return MPI_SUCCESS;
}

/* The aggregators: the first rank of each host, then, for cb_nodes above the
 * number of hosts, ranks spread evenly. */
static int choose_aggregators(struct kumi_file *f, const char *fn, const int *leader)
{
    int nh = 0;
    for (int r = 0; r < f->size; r++) nh += leader[r];
    if (f->cb_nodes <= 0) f->cb_nodes = nh;
    int n = f->cb_nodes;
    int *a = malloc(sizeof(int) * (size_t)n);
    if (!a) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (n <= nh) {
        for (int r = 0, k = 0; r < f->size && k < n; r++)
            if (leader[r]) a[k++] = r;
    } else {
        for (int k = 0; k < n; k++) a[k] = (int)((int64_t)k * f->size / n);
    }
    free(f->aggr);
    f->aggr = a;
    f->naggr = n;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ the view */
static MPI_Offset rep_size(const struct kumi_file *f, const struct kumi_dt *dt)
{
    switch (f->rep) {
    case KUMI_REP_EXTERNAL32: return (MPI_Offset)dt->xsize;
    case KUMI_REP_USER: {
        if (!f->urep->extent) return (MPI_Offset)dt->size;
        MPI_Datatype b = kumi_dt_basic_handle(dt);
        if (b == MPI_DATATYPE_NULL) return -1;
        MPI_Aint e = 0;
        if (f->urep->extent(b, &e, f->urep->extra) != MPI_SUCCESS) return -1;
        return (MPI_Offset)dt->nelem * e;
    }
    default: return (MPI_Offset)dt->size;
    }
}

MPI_Offset kumi_io_stream_len(const struct kumi_file *f, const struct kumi_dt *dt, MPI_Count count)
{
    MPI_Offset s = rep_size(f, dt);
    return s < 0 ? -1 : s * (MPI_Offset)count;
}

static const struct kumi_fblk *find_blk(const struct kumi_file *f, MPI_Offset r)
{
    size_t lo = 0, hi = f->nblk;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f->blk[mid].soff <= r) lo = mid; else hi = mid;
    }
    return &f->blk[lo];
}

MPI_Offset kumi_io_file_off(const struct kumi_file *f, MPI_Offset s)
{
    MPI_Offset k = s / f->tsize, r = s % f->tsize;
    const struct kumi_fblk *b = find_blk(f, r);
    return f->disp + k * f->textent + b->foff + (r - b->soff);
}

MPI_Offset kumi_io_stream_before(const struct kumi_file *f, MPI_Offset b)
{
    if (b <= f->disp) return 0;
    MPI_Offset rel = b - f->disp;
    MPI_Offset k = f->textent > 0 ? rel / f->textent : 0, rem = f->textent > 0 ? rel % f->textent : rel;
    MPI_Offset n = k * f->tsize;
    for (size_t i = 0; i < f->nblk; i++) {
        MPI_Offset x = rem - f->blk[i].foff;
        if (x <= 0) break;
        n += x < f->blk[i].len ? x : f->blk[i].len;
    }
    return n;
}

int kumi_io_pieces(const struct kumi_file *f, MPI_Offset s, MPI_Offset n, kumi_io_piece_fn fn, void *arg)
{
    if (n <= 0) return 0;
    MPI_Offset k = s / f->tsize, r = s % f->tsize;
    size_t i = (size_t)(find_blk(f, r) - f->blk);
    MPI_Offset cur_off = -1, cur_len = 0, cur_buf = 0, done = 0;
    while (done < n) {
        const struct kumi_fblk *b = &f->blk[i];
        MPI_Offset in = r - b->soff, take = b->len - in;
        if (take > n - done) take = n - done;
        MPI_Offset off = f->disp + k * f->textent + b->foff + in;
        if (cur_len && cur_off + cur_len == off) cur_len += take;
        else {
            if (cur_len) { int rc = fn(arg, cur_off, cur_len, cur_buf); if (rc) return rc; }
            cur_off = off; cur_len = take; cur_buf = done;
        }
        done += take;
        r += take;
        if (++i == f->nblk || r >= f->tsize) {
            if (r >= f->tsize) { k++; r = 0; i = 0; }
            else i = (size_t)(find_blk(f, r) - f->blk);
        } else if (r < f->blk[i].soff) r = f->blk[i].soff;
    }
    return cur_len ? fn(arg, cur_off, cur_len, cur_buf) : 0;
}

static int add_blk(struct kumi_fblk **v, size_t *n, size_t *cap, MPI_Offset off, MPI_Offset len, MPI_Offset soff)
{
    if (*n && (*v)[*n - 1].foff + (*v)[*n - 1].len == off) { (*v)[*n - 1].len += len; return 0; }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct kumi_fblk *t = realloc(*v, nc * sizeof *t);
        if (!t) return -1;
        *v = t; *cap = nc;
    }
    (*v)[(*n)++] = (struct kumi_fblk){ off, len, soff };
    return 0;
}

/* The data blocks of one tile of filetype ft (file representation of f). */
static int build_blocks(struct kumi_file *f, const char *fn, struct kumi_dt *ft)
{
    struct kumi_fblk *v = NULL;
    size_t n = 0, cap = 0;
    MPI_Offset fsz = rep_size(f, ft);
    if (fsz < 0) return kumi_error(MPI_ERR_UNSUPPORTED_DATAREP, "%s: datarep \"%s\" cannot size filetype %s",
                                   fn, f->datarep, kumi_dt_name(ft));
    if (fsz == 0) return kumi_error(MPI_ERR_TYPE, "%s: filetype %s (argument filetype) holds no data", fn,
                                    kumi_dt_name(ft));
    if (fsz != (MPI_Offset)ft->size) {
        /* another size in the file: only a filetype without holes maps simply */
        if (!(ft->contig && ft->true_lb == 0 && (size_t)ft->extent == ft->size))
            return kumi_error(MPI_ERR_UNSUPPORTED_OPERATION, "%s: a filetype with holes (%s) in datarep \"%s\", "
                              "whose sizes differ from native ones, is not supported", fn, kumi_dt_name(ft), f->datarep);
        if (add_blk(&v, &n, &cap, 0, fsz, 0)) goto nomem;
        f->textent = fsz;
    } else {
        MPI_Offset soff = 0, last = 0;
        for (size_t i = 0; i < ft->nsegs; i++) {
            const struct kumi_dt_seg *s = &ft->segs[i];
            for (size_t j = 0; j < s->count; j++) {
                MPI_Offset off = (MPI_Offset)s->off + (MPI_Offset)j * s->stride;
                if (off < 0 || off < last) {
                    free(v);
                    return kumi_error(MPI_ERR_TYPE, "%s: filetype %s (argument filetype) has %s displacements; "
                                      "the standard requires non-negative, monotonically non-decreasing ones", fn,
                                      kumi_dt_name(ft), off < 0 ? "negative" : "decreasing");
                }
                if (add_blk(&v, &n, &cap, off, (MPI_Offset)s->len, soff)) goto nomem;
                soff += (MPI_Offset)s->len;
                last = off + (MPI_Offset)s->len;
            }
        }
        f->textent = ft->extent;
        if (f->textent <= 0) {
            free(v);
            return kumi_error(MPI_ERR_TYPE, "%s: filetype %s (argument filetype) has extent %lld", fn,
                              kumi_dt_name(ft), (long long)ft->extent);
        }
    }
    free(f->blk);
    f->blk = v;
    f->nblk = n;
    f->tsize = fsz;
    return MPI_SUCCESS;
nomem:
    free(v);
    return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
}

static const struct kumi_datarep *find_rep(const char *name)
{
    for (const struct kumi_datarep *r = datareps; r; r = r->next)
        if (!strcmp(r->name, name)) return r;
    return NULL;
}

static int set_view(struct kumi_file *f, const char *fn, MPI_Offset disp, struct kumi_dt *et, struct kumi_dt *ft,
                    const char *datarep)
{
    enum kumi_rep rep;
    const struct kumi_datarep *u = NULL;
    if (!datarep) return kumi_error(MPI_ERR_ARG, "%s: argument datarep is NULL", fn);
    if (!strcmp(datarep, "native")) rep = KUMI_REP_NATIVE;
    else if (!strcmp(datarep, "internal")) rep = KUMI_REP_INTERNAL;
    else if (!strcmp(datarep, "external32")) rep = KUMI_REP_EXTERNAL32;
    else if ((u = find_rep(datarep))) rep = KUMI_REP_USER;
    else return kumi_error(MPI_ERR_UNSUPPORTED_DATAREP, "%s: data representation \"%s\" (argument datarep) "
                           "is neither native, internal, external32 nor registered", fn, datarep);
    if (!et->committed && !et->predefined)
        return kumi_error(MPI_ERR_TYPE, "%s: datatype %s (argument etype) is not committed", fn, kumi_dt_name(et));
    if (!ft->committed && !ft->predefined)
        return kumi_error(MPI_ERR_TYPE, "%s: datatype %s (argument filetype) is not committed", fn, kumi_dt_name(ft));
    if (et->size == 0)
        return kumi_error(MPI_ERR_TYPE, "%s: etype %s (argument etype) has size 0", fn, kumi_dt_name(et));
    if (ft->size % et->size)
        return kumi_error(MPI_ERR_TYPE, "%s: filetype %s (size %zu) is not made of etype %s (size %zu)", fn,
                          kumi_dt_name(ft), ft->size, kumi_dt_name(et), et->size);
    if (disp == MPI_DISPLACEMENT_CURRENT) {
        if (!(f->amode & MPI_MODE_SEQUENTIAL))
            return kumi_error(MPI_ERR_ARG, "%s: MPI_DISPLACEMENT_CURRENT (argument disp) needs MPI_MODE_SEQUENTIAL", fn);
        MPI_Offset cur;
        int rc = kumi_io_shared_fetch_add(f, fn, 0, &cur);
        if (rc) return rc;
        disp = kumi_io_file_off(f, cur * f->esize);
    } else if (disp < 0)
        return kumi_error(MPI_ERR_ARG, "%s: displacement %lld (argument disp) is negative", fn, (long long)disp);
    struct kumi_file save = *f;
    f->rep = rep;
    f->urep = u;
    snprintf(f->datarep, sizeof f->datarep, "%s", datarep);
    f->blk = NULL;
    int rc = build_blocks(f, fn, ft);
    if (!rc && (f->esize = rep_size(f, et)) <= 0)
        rc = kumi_error(MPI_ERR_UNSUPPORTED_DATAREP, "%s: datarep \"%s\" cannot size etype %s", fn, datarep,
                        kumi_dt_name(et));
    if (!rc && f->tsize % f->esize)
        rc = kumi_error(MPI_ERR_TYPE, "%s: filetype %s is not made of etype %s in datarep \"%s\"", fn,
                        kumi_dt_name(ft), kumi_dt_name(et), datarep);
    if (rc) {
        free(f->blk);
        *f = save;
        return rc;
    }
    free(save.blk);
    kumi_dt_retain(et);
    kumi_dt_retain(ft);
    if (save.etype) kumi_dt_release(save.etype);
    if (save.filetype) kumi_dt_release(save.filetype);
    f->etype = et;
    f->filetype = ft;
    f->disp = disp;
    f->fp = 0;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- open */
static const char *strip_prefix(const char *name)
{
    static const char *const pfx[] = { "ufs:", "nfs:", "posix:", "file:" };
    for (size_t i = 0; i < sizeof pfx / sizeof *pfx; i++)
        if (!strncmp(name, pfx[i], strlen(pfx[i]))) return name + strlen(pfx[i]);
    return name;
}

static int check_amode(const char *fn, int amode)
{
    const int known = MPI_MODE_RDONLY | MPI_MODE_RDWR | MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL |
                      MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_UNIQUE_OPEN | MPI_MODE_SEQUENTIAL | MPI_MODE_APPEND;
    int acc = !!(amode & MPI_MODE_RDONLY) + !!(amode & MPI_MODE_RDWR) + !!(amode & MPI_MODE_WRONLY);
    if (amode & ~known)
        return kumi_error(MPI_ERR_AMODE, "%s: amode 0x%x (argument amode) has unknown bits 0x%x", fn, amode,
                          amode & ~known);
    if (acc != 1)
        return kumi_error(MPI_ERR_AMODE, "%s: amode 0x%x (argument amode) must have exactly one of MPI_MODE_RDONLY, "
                          "MPI_MODE_RDWR and MPI_MODE_WRONLY", fn, amode);
    if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
        return kumi_error(MPI_ERR_AMODE, "%s: amode (argument amode): MPI_MODE_RDONLY with MPI_MODE_%s", fn,
                          amode & MPI_MODE_CREATE ? "CREATE" : "EXCL");
    if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
        return kumi_error(MPI_ERR_AMODE, "%s: amode (argument amode): MPI_MODE_RDWR with MPI_MODE_SEQUENTIAL", fn);
    return MPI_SUCCESS;
}

static void file_free(struct kumi_file *f)
{
    if (f->shwin != MPI_WIN_NULL) kumi_mpi_win_free(&f->shwin);
    if (f->fd >= 0) close(f->fd);
    if (f->commh != MPI_COMM_NULL) kumi_mpi_comm_free(&f->commh);
    if (f->etype) kumi_dt_release(f->etype);
    if (f->filetype) kumi_dt_release(f->filetype);
    if (f->errh) kumi_errh_release(f->errh);
    kumi_info_release(f->info);
    free(f->blk);
    free(f->aggr);
    free(f->path);
    f->magic = KUMI_MAGIC_DEAD;
    free(f);
}

static int open_fd(struct kumi_file *f, const char *fn, int amode, bool create, bool excl)
{
    int fl = (amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR;
    if (create) fl |= O_CREAT;
    if (excl) fl |= O_EXCL;
    f->fd = open(f->path, fl | O_CLOEXEC, 0666);
    if (f->fd < 0 && errno == EACCES && (amode & MPI_MODE_WRONLY))
        f->fd = open(f->path, (fl & ~O_RDWR) | O_WRONLY | O_CLOEXEC, 0666);
    if (f->fd < 0) return sys_error(fn, "cannot open", f->path, errno);
    struct stat st;
    if (fstat(f->fd, &st) == 0 && S_ISDIR(st.st_mode))
        return kumi_error(MPI_ERR_BAD_FILE, "%s: \"%s\" (argument filename) is a directory", fn, f->path);
    return MPI_SUCCESS;
}

int kumi_mpi_file_open(struct kumi_comm *comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    static const char fn[] = "MPI_File_open";
    if (!fh) return kumi_error(MPI_ERR_ARG, "%s: argument fh is NULL", fn);
    *fh = MPI_FILE_NULL;
    if (comm->inter) return kumi_error(MPI_ERR_COMM, "%s: argument comm is an intercommunicator", fn);
    if (!filename) return kumi_error(MPI_ERR_BAD_FILE, "%s: argument filename is NULL", fn);
    struct kumi_info *in = NULL;
    if (info != MPI_INFO_NULL && !(in = kumi_info_get(info)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    int rc = check_amode(fn, amode);
    /* every rank must pass the same amode */
    int64_t v[2] = { amode, -(int64_t)amode };
    int arc = kumi_coll_allreduce(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, MPI_IN_PLACE, v, 2,
                                  kumi_dt_get(MPI_INT64_T), kumi_op_get(MPI_MIN), comm);
    if (arc) return arc;
    if (!rc && v[0] != -v[1])
        rc = kumi_error(MPI_ERR_AMODE, "%s: the ranks passed different amodes (argument amode)", fn);
    if (!rc && !*strip_prefix(filename))
        rc = kumi_error(MPI_ERR_BAD_FILE, "%s: argument filename is empty", fn);
    if (rc) return rc;

    struct kumi_file *f = calloc(1, sizeof *f);
    if (!f) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    f->magic = KUMI_MAGIC_FILE;
    f->handle = (MPI_File)f;
    f->fd = -1;
    f->commh = MPI_COMM_NULL;
    f->shwin = MPI_WIN_NULL;
    f->amode = amode;
    f->cb_buffer_size = CB_BUFFER_DEFAULT;
    f->path = strdup(strip_prefix(filename));
    f->errh = file_null_errh();
    kumi_errh_retain(f->errh);
    if (!f->path) { file_free(f); return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); }
    if ((rc = kumi_mpi_comm_dup(comm, &f->commh))) { file_free(f); return rc; }
    f->comm = kumi_comm_get(f->commh);
    f->rank = f->comm->rank;
    f->size = f->comm->size;

    /* rank 0 creates the file, then the others open it */
    bool create = amode & MPI_MODE_CREATE, excl = amode & MPI_MODE_EXCL;
    rc = MPI_SUCCESS;
    if (f->rank == 0) rc = open_fd(f, fn, amode, create, excl);
    rc = agree(f->comm, fn, rc);
    if (!rc && f->rank != 0) rc = open_fd(f, fn, amode, false, false);
    if ((rc = agree(f->comm, fn, rc))) {
        file_free(f);
        return rc;
    }

    /* hints and aggregators */
    MPI_Comm node = MPI_COMM_NULL;
    int *leader = calloc((size_t)f->size, sizeof(int));
    int lead = 0;
    rc = leader ? kumi_mpi_comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)
                : kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    if (!rc) {
        lead = kumi_comm_get(node)->rank == 0;
        kumi_mpi_comm_free(&node);
        rc = kumi_coll_allgather(fn, KUMI_FORM_BLOCKING, MPI_INFO_NULL, NULL, &lead, 1, kumi_dt_get(MPI_INT),
                                 leader, 1, kumi_dt_get(MPI_INT), f->comm);
    }
    if (!rc) rc = set_hints(f, in);
    if (!rc) rc = choose_aggregators(f, fn, leader);
    free(leader);
    if (!rc) rc = set_hints(f, NULL);          /* reflect the cb_nodes chosen */
    /* the default view: bytes, native */
    if (!rc) rc = set_view(f, fn, 0, kumi_dt_get(MPI_BYTE), kumi_dt_get(MPI_BYTE), "native");
    /* the shared file pointer */
    int64_t *base = NULL;
    if (!rc) rc = kumi_win_make(fn, MPI_WIN_FLAVOR_ALLOCATE, NULL, f->rank == 0 ? 8 : 0, 8, MPI_INFO_NULL, f->comm,
                                &base, &f->shwin);
    if (!rc && (amode & MPI_MODE_APPEND)) {
        struct stat st;
        if (fstat(f->fd, &st) == 0) f->fp = st.st_size;
    }
    if (!rc && f->rank == 0) *base = f->fp;
    if (!rc) rc = barrier(f->comm, fn);
    if (rc) { file_free(f); return rc; }
    *fh = f->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_file_close(MPI_File *fh)
{
    static const char fn[] = "MPI_File_close";
    if (!fh) return kumi_file_err_handle(NULL, kumi_error(MPI_ERR_ARG, "%s: argument fh is NULL", fn));
    struct kumi_file *f = kumi_file_get(*fh);
    if (!f)
        return kumi_file_err_handle(NULL, kumi_error(MPI_ERR_FILE, "%s: argument fh is %s", fn,
                                                     *fh == MPI_FILE_NULL ? "MPI_FILE_NULL" : "not a valid file"));
    int rc = barrier(f->comm, fn);
    if (!rc && (f->amode & MPI_MODE_DELETE_ON_CLOSE) && f->rank == 0 && unlink(f->path) != 0)
        rc = sys_error(fn, "cannot delete", f->path, errno);
    if (rc) return kumi_file_err_handle(f, rc);
    file_free(f);
    *fh = MPI_FILE_NULL;
    return MPI_SUCCESS;
}

int kumi_mpi_file_delete(const char *filename, MPI_Info info)
{
    static const char fn[] = "MPI_File_delete";
    if (!filename) return kumi_error(MPI_ERR_BAD_FILE, "%s: argument filename is NULL", fn);
    if (info != MPI_INFO_NULL && !kumi_info_get(info))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    const char *p = strip_prefix(filename);
    if (unlink(p) != 0) return sys_error(fn, "cannot delete", p, errno);
    return MPI_SUCCESS;
}

/* ---------------------------------------------- size, group, amode, info */
static int writable(struct kumi_file *f, const char *fn)
{
    if (f->amode & MPI_MODE_RDONLY)
        return kumi_error(MPI_ERR_ACCESS, "%s: the file was opened MPI_MODE_RDONLY", fn);
    return MPI_SUCCESS;
}

int kumi_mpi_file_set_size(struct kumi_file *fh, MPI_Offset size)
{
    static const char fn[] = "MPI_File_set_size";
    int rc = writable(fh, fn);
    if (!rc && size < 0) rc = kumi_error(MPI_ERR_ARG, "%s: size %lld (argument size) is negative", fn, (long long)size);
    int64_t v[2] = { size, -size };
    int arc = allreduce_i64(fh->comm, fn, v, 2, MPI_MIN);
    if (rc) return rc;
    if (arc) return arc;
    if (v[0] != -v[1]) return kumi_error(MPI_ERR_ARG, "%s: the ranks passed different sizes (argument size)", fn);
    if (fh->rank == 0 && ftruncate(fh->fd, (off_t)size) != 0) rc = sys_error(fn, "cannot resize", fh->path, errno);
    return agree(fh->comm, fn, rc);
}

int kumi_mpi_file_preallocate(struct kumi_file *fh, MPI_Offset size)
{
    static const char fn[] = "MPI_File_preallocate";
    int rc = writable(fh, fn);
    if (!rc && size < 0) rc = kumi_error(MPI_ERR_ARG, "%s: size %lld (argument size) is negative", fn, (long long)size);
    if (!rc && (fh->amode & MPI_MODE_SEQUENTIAL))
        rc = kumi_error(MPI_ERR_UNSUPPORTED_OPERATION, "%s: the file was opened MPI_MODE_SEQUENTIAL", fn);
    rc = agree(fh->comm, fn, rc);
    if (rc) return rc;
    if (fh->rank == 0 && size > 0) {
        int e = posix_fallocate(fh->fd, 0, (off_t)size);
        if (e == EOPNOTSUPP || e == EINVAL) {
            struct stat st;
            if (fstat(fh->fd, &st) == 0 && st.st_size < size && ftruncate(fh->fd, (off_t)size) != 0) e = errno;
            else e = 0;
        }
        if (e) rc = sys_error(fn, "cannot preallocate", fh->path, e);
    }
    return agree(fh->comm, fn, rc);
}

int kumi_mpi_file_get_size(struct kumi_file *fh, MPI_Offset *size)
{
    if (!size) return kumi_error(MPI_ERR_ARG, "MPI_File_get_size: argument size is NULL");
    struct stat st;
    if (fstat(fh->fd, &st) != 0) return sys_error("MPI_File_get_size", "cannot stat", fh->path, errno);
    *size = st.st_size;
    return MPI_SUCCESS;
}

int kumi_mpi_file_get_group(struct kumi_file *fh, MPI_Group *group)
{
    if (!group) return kumi_error(MPI_ERR_ARG, "MPI_File_get_group: argument group is NULL");
    struct kumi_group *g = kumi_group_of_comm(fh->comm);
    if (!g) return kumi_error(MPI_ERR_NO_MEM, "MPI_File_get_group: out of memory");
    *group = g->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_file_get_amode(struct kumi_file *fh, int *amode)
{
    if (!amode) return kumi_error(MPI_ERR_ARG, "MPI_File_get_amode: argument amode is NULL");
    *amode = fh->amode;
    return MPI_SUCCESS;
}

int kumi_mpi_file_get_info(struct kumi_file *fh, MPI_Info *info_used)
{
    if (!info_used) return kumi_error(MPI_ERR_ARG, "MPI_File_get_info: argument info_used is NULL");
    struct kumi_info *i = kumi_info_dup(fh->info);
    if (!i) return kumi_error(MPI_ERR_NO_MEM, "MPI_File_get_info: out of memory");
    *info_used = kumi_info_handle(i);
    return MPI_SUCCESS;
}

int kumi_mpi_file_set_info(struct kumi_file *fh, MPI_Info info)
{
    static const char fn[] = "MPI_File_set_info";
    struct kumi_info *in = NULL;
    if (info != MPI_INFO_NULL && !(in = kumi_info_get(info)))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    int old = fh->cb_nodes;
    int rc = set_hints(fh, in);
    if (!rc && fh->cb_nodes != old) {
        int *lead = calloc((size_t)fh->size, sizeof(int));
        if (!lead) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        for (int k = 0; k < fh->naggr; k++) lead[fh->aggr[k]] = 1;
        rc = choose_aggregators(fh, fn, lead);
        free(lead);
    }
    return rc;
}

/* ------------------------------------------------ atomicity, sync, view */
int kumi_mpi_file_set_atomicity(struct kumi_file *fh, int flag)
{
    static const char fn[] = "MPI_File_set_atomicity";
    int64_t v[2] = { !!flag, -(int64_t)!!flag };
    int rc = allreduce_i64(fh->comm, fn, v, 2, MPI_MIN);
    if (rc) return rc;
    if (v[0] != -v[1]) return kumi_error(MPI_ERR_ARG, "%s: the ranks passed different flags (argument flag)", fn);
    fh->atomic = flag != 0;
    return MPI_SUCCESS;
}

int kumi_mpi_file_get_atomicity(struct kumi_file *fh, int *flag)
{
    if (!flag) return kumi_error(MPI_ERR_ARG, "MPI_File_get_atomicity: argument flag is NULL");
    *flag = fh->atomic;
    return MPI_SUCCESS;
}

int kumi_mpi_file_sync(struct kumi_file *fh)
{
    static const char fn[] = "MPI_File_sync";
    if (fh->split) return kumi_error(MPI_ERR_OTHER, "%s: a split collective is in progress on the file", fn);
    int rc = MPI_SUCCESS;
    if (!(fh->amode & MPI_MODE_RDONLY) && fsync(fh->fd) != 0) rc = sys_error(fn, "cannot sync", fh->path, errno);
    return agree(fh->comm, fn, rc);
}

int kumi_mpi_file_set_view(struct kumi_file *fh, MPI_Offset disp, struct kumi_dt *etype, struct kumi_dt *filetype,
                           const char *datarep, MPI_Info info)
{
    static const char fn[] = "MPI_File_set_view";
    struct kumi_info *in = NULL;
    int rc = MPI_SUCCESS;
    if (info != MPI_INFO_NULL && !(in = kumi_info_get(info)))
        rc = kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    if (!rc && fh->split) rc = kumi_error(MPI_ERR_OTHER, "%s: a split collective is in progress on the file", fn);
    if (!rc) rc = set_view(fh, fn, disp, etype, filetype, datarep);
    if (!rc && in) rc = set_hints(fh, in);
    if ((rc = agree(fh->comm, fn, rc))) return rc;
    /* the shared pointer goes back to 0 too */
    if (fh->rank == 0) rc = kumi_io_shared_set(fh, fn, 0);
    return agree(fh->comm, fn, rc);
}

int kumi_mpi_file_get_view(struct kumi_file *fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                           char *datarep)
{
    if (!disp || !etype || !filetype || !datarep)
        return kumi_error(MPI_ERR_ARG, "MPI_File_get_view: argument %s is NULL",
                          !disp ? "disp" : !etype ? "etype" : !filetype ? "filetype" : "datarep");
    *disp = fh->disp;
    if (!fh->etype->predefined) kumi_dt_retain(fh->etype);
    if (!fh->filetype->predefined) kumi_dt_retain(fh->filetype);
    *etype = fh->etype->handle;
    *filetype = fh->filetype->handle;
    snprintf(datarep, MPI_MAX_DATAREP_STRING, "%s", fh->datarep);
    return MPI_SUCCESS;
}

static int type_extent(struct kumi_file *fh, struct kumi_dt *dt, MPI_Count *extent)
{
    switch (fh->rep) {
    case KUMI_REP_EXTERNAL32:
        *extent = dt->extent - (MPI_Count)dt->size + (MPI_Count)dt->xsize;
        return MPI_SUCCESS;
    case KUMI_REP_USER: {
        MPI_Offset s = rep_size(fh, dt);
        if (s < 0)
            return kumi_error(MPI_ERR_UNSUPPORTED_DATAREP, "MPI_File_get_type_extent: datarep \"%s\" cannot size %s",
                              fh->datarep, kumi_dt_name(dt));
        *extent = dt->extent - (MPI_Count)dt->size + s;
        return MPI_SUCCESS;
    }
    default:
        *extent = dt->extent;
        return MPI_SUCCESS;
    }
}

int kumi_mpi_file_get_type_extent(struct kumi_file *fh, struct kumi_dt *datatype, MPI_Aint *extent)
{
    if (!extent) return kumi_error(MPI_ERR_ARG, "MPI_File_get_type_extent: argument extent is NULL");
    MPI_Count e = 0;
    int rc = type_extent(fh, datatype, &e);
    if (!rc) *extent = (MPI_Aint)e;
    return rc;
}

int kumi_mpi_file_get_type_extent_c(struct kumi_file *fh, struct kumi_dt *datatype, MPI_Count *extent)
{
    if (!extent) return kumi_error(MPI_ERR_ARG, "MPI_File_get_type_extent_c: argument extent is NULL");
    return type_extent(fh, datatype, extent);
}

int kumi_mpi_file_get_byte_offset(struct kumi_file *fh, MPI_Offset offset, MPI_Offset *disp)
{
    if (!disp) return kumi_error(MPI_ERR_ARG, "MPI_File_get_byte_offset: argument disp is NULL");
    if (offset < 0)
        return kumi_error(MPI_ERR_ARG, "MPI_File_get_byte_offset: offset %lld (argument offset) is negative",
                          (long long)offset);
    *disp = kumi_io_file_off(fh, offset * fh->esize);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------- file pointers */
static int no_sequential(struct kumi_file *f, const char *fn)
{
    if (f->amode & MPI_MODE_SEQUENTIAL)
        return kumi_error(MPI_ERR_UNSUPPORTED_OPERATION, "%s: not allowed on a file opened MPI_MODE_SEQUENTIAL", fn);
    return MPI_SUCCESS;
}

/* The offset (etypes) that offset / whence name, from pointer cur. */
static int seek_target(struct kumi_file *f, const char *fn, MPI_Offset offset, int whence, MPI_Offset cur,
                       MPI_Offset *out)
{
    MPI_Offset v;
    switch (whence) {
    case MPI_SEEK_SET: v = offset; break;
    case MPI_SEEK_CUR: v = cur + offset; break;
    case MPI_SEEK_END: {
        struct stat st;
        if (fstat(f->fd, &st) != 0) return sys_error(fn, "cannot stat", f->path, errno);
        MPI_Offset s = kumi_io_stream_before(f, st.st_size);
        v = (s + f->esize - 1) / f->esize + offset;
        break;
    }
    default:
        return kumi_error(MPI_ERR_ARG, "%s: whence %d (argument whence) is none of MPI_SEEK_SET, _CUR, _END", fn, whence);
    }
    if (v < 0) return kumi_error(MPI_ERR_ARG, "%s: the pointer would be negative (%lld)", fn, (long long)v);
    *out = v;
    return MPI_SUCCESS;
}

int kumi_mpi_file_seek(struct kumi_file *fh, MPI_Offset offset, int whence)
{
    int rc = no_sequential(fh, "MPI_File_seek");
    if (!rc) rc = seek_target(fh, "MPI_File_seek", offset, whence, fh->fp, &fh->fp);
    return rc;
}

int kumi_mpi_file_get_position(struct kumi_file *fh, MPI_Offset *offset)
{
    if (!offset) return kumi_error(MPI_ERR_ARG, "MPI_File_get_position: argument offset is NULL");
    int rc = no_sequential(fh, "MPI_File_get_position");
    if (!rc) *offset = fh->fp;
    return rc;
}

int kumi_io_shared_fetch_add(struct kumi_file *f, const char *fn, MPI_Offset delta, MPI_Offset *old)
{
    struct kumi_win *w = kumi_win_get(f->shwin);
    int64_t d = delta, o = 0;
    int rc = kumi_mpi_win_lock(MPI_LOCK_SHARED, 0, 0, w);
    if (!rc) {
        rc = kumi_mpi_fetch_and_op(&d, &o, kumi_dt_get(MPI_INT64_T), 0, 0, kumi_op_get(MPI_SUM), w);
        int rc2 = kumi_mpi_win_unlock(0, w);
        if (!rc) rc = rc2;
    }
    if (rc) return kumi_err_via(rc, fn, "the shared file pointer");
    *old = o;
    return MPI_SUCCESS;
}

int kumi_io_shared_set(struct kumi_file *f, const char *fn, MPI_Offset v)
{
    struct kumi_win *w = kumi_win_get(f->shwin);
    int64_t d = v, o = 0;
    int rc = kumi_mpi_win_lock(MPI_LOCK_SHARED, 0, 0, w);
    if (!rc) {
        rc = kumi_mpi_fetch_and_op(&d, &o, kumi_dt_get(MPI_INT64_T), 0, 0, kumi_op_get(MPI_REPLACE), w);
        int rc2 = kumi_mpi_win_unlock(0, w);
        if (!rc) rc = rc2;
    }
    return rc ? kumi_err_via(rc, fn, "the shared file pointer") : MPI_SUCCESS;
}

int kumi_mpi_file_seek_shared(struct kumi_file *fh, MPI_Offset offset, int whence)
{
    static const char fn[] = "MPI_File_seek_shared";
    int64_t v[4] = { offset, -offset, whence, -(int64_t)whence };
    int rc = allreduce_i64(fh->comm, fn, v, 4, MPI_MIN);
    if (rc) return rc;
    if (v[0] != -v[1] || v[2] != -v[3])
        return kumi_error(MPI_ERR_ARG, "%s: the ranks passed different offsets or whences", fn);
    if (fh->rank == 0) {
        MPI_Offset cur = 0, nv = 0;
        rc = kumi_io_shared_fetch_add(fh, fn, 0, &cur);
        if (!rc) rc = seek_target(fh, fn, offset, whence, cur, &nv);
        if (!rc) rc = kumi_io_shared_set(fh, fn, nv);
    }
    return agree(fh->comm, fn, rc);
}

int kumi_mpi_file_get_position_shared(struct kumi_file *fh, MPI_Offset *offset)
{
    if (!offset) return kumi_error(MPI_ERR_ARG, "MPI_File_get_position_shared: argument offset is NULL");
    return kumi_io_shared_fetch_add(fh, "MPI_File_get_position_shared", 0, offset);
}

/* ------------------------------------------------------ error handlers */
int kumi_mpi_file_create_errhandler(MPI_File_errhandler_function *file_errhandler_fn, MPI_Errhandler *errhandler)
{
    if (!file_errhandler_fn || !errhandler)
        return kumi_file_err_handle(NULL, kumi_error(MPI_ERR_ARG, "MPI_File_create_errhandler: argument %s is NULL",
                                                     errhandler ? "file_errhandler_fn" : "errhandler"));
    struct kumi_errhandler *e = NULL;
    int rc = kumi_errh_create(KUMI_ERRH_OBJ_FILE, (MPI_Comm_errhandler_function *)file_errhandler_fn, &e);
    if (rc) return kumi_file_err_handle(NULL, rc);
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

/* file NULL: MPI_FILE_NULL, whose handler files get at open */
int kumi_mpi_file_set_errhandler(struct kumi_file *file, struct kumi_errhandler *errhandler)
{
    if (!kumi_errh_fits(errhandler, KUMI_ERRH_OBJ_FILE))
        return kumi_error(MPI_ERR_ARG, "MPI_File_set_errhandler: argument errhandler was not created for files");
    kumi_errh_retain(errhandler);
    struct kumi_errhandler **slot = file ? &file->errh : &null_errh;
    if (*slot) kumi_errh_release(*slot);
    *slot = errhandler;
    return MPI_SUCCESS;
}

int kumi_mpi_file_get_errhandler(struct kumi_file *file, MPI_Errhandler *errhandler)
{
    if (!errhandler) return kumi_error(MPI_ERR_ARG, "MPI_File_get_errhandler: argument errhandler is NULL");
    struct kumi_errhandler *e = file ? file->errh : file_null_errh();
    kumi_errh_retain(e);
    *errhandler = e->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_file_call_errhandler(struct kumi_file *fh, int errorcode)
{
    struct kumi_errhandler *e = fh ? fh->errh : file_null_errh();
    kumi_errh_invoke(e, KUMI_ERRH_OBJ_FILE, fh ? fh->handle : MPI_FILE_NULL, errorcode);
    return MPI_SUCCESS;
}

/* -------------------------------------------------- data representations */
static int register_rep(const char *fn, const char *datarep, MPI_Datarep_conversion_function *rd,
                        MPI_Datarep_conversion_function *wr, MPI_Datarep_conversion_function_c *rd_c,
                        MPI_Datarep_conversion_function_c *wr_c, MPI_Datarep_extent_function *ext, void *extra)
{
    int rc = MPI_SUCCESS;
    if (!datarep) rc = kumi_error(MPI_ERR_ARG, "%s: argument datarep is NULL", fn);
    else if (!*datarep || strlen(datarep) >= MPI_MAX_DATAREP_STRING)
        rc = kumi_error(MPI_ERR_ARG, "%s: datarep name \"%.40s\" is empty or longer than MPI_MAX_DATAREP_STRING", fn,
                        datarep);
    else if (!ext) rc = kumi_error(MPI_ERR_ARG, "%s: argument dtype_file_extent_fn is NULL", fn);
    else if (!strcmp(datarep, "native") || !strcmp(datarep, "internal") || !strcmp(datarep, "external32") ||
             find_rep(datarep))
        rc = kumi_error(MPI_ERR_DUP_DATAREP, "%s: data representation \"%s\" (argument datarep) is already defined",
                        fn, datarep);
    if (rc) return kumi_file_err_handle(NULL, rc);
    struct kumi_datarep *r = calloc(1, sizeof *r);
    if (!r) return kumi_file_err_handle(NULL, kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn));
    snprintf(r->name, sizeof r->name, "%s", datarep);
    r->rd = rd; r->wr = wr; r->rd_c = rd_c; r->wr_c = wr_c;
    r->extent = ext;
    r->extra = extra;
    r->next = datareps;
    datareps = r;
    return MPI_SUCCESS;
}

int kumi_mpi_register_datarep(const char *datarep, MPI_Datarep_conversion_function *read_conversion_fn,
                              MPI_Datarep_conversion_function *write_conversion_fn,
                              MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return register_rep("MPI_Register_datarep", datarep, read_conversion_fn, write_conversion_fn, NULL, NULL,
                        dtype_file_extent_fn, extra_state);
}

int kumi_mpi_register_datarep_c(const char *datarep, MPI_Datarep_conversion_function_c *read_conversion_fn,
                                MPI_Datarep_conversion_function_c *write_conversion_fn,
                                MPI_Datarep_extent_function *dtype_file_extent_fn, void *extra_state)
{
    return register_rep("MPI_Register_datarep_c", datarep, NULL, NULL, read_conversion_fn, write_conversion_fn,
                        dtype_file_extent_fn, extra_state);
}

/* User buffer <-> stream bytes in the file's representation. */
int kumi_io_convert(struct kumi_file *f, const char *fn, int dir, void *ubuf, MPI_Count count, struct kumi_dt *dt,
                    unsigned char *fbuf, MPI_Offset flen)
{
    size_t nb = (size_t)count * dt->size;
    switch (f->rep) {
    case KUMI_REP_NATIVE: case KUMI_REP_INTERNAL:
        if (dir == 0) kumi_dt_pack_range(dt, ubuf, (size_t)count, 0, nb, fbuf);
        else kumi_dt_unpack_range(dt, fbuf, (size_t)count, 0, (size_t)flen < nb ? (size_t)flen : nb, ubuf);
        return MPI_SUCCESS;
    case KUMI_REP_EXTERNAL32: {
        unsigned char *tmp = malloc(nb ? nb : 1);
        if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        if (dir == 0) {
            kumi_dt_pack_range(dt, ubuf, (size_t)count, 0, nb, tmp);
            kumi_dt_external32(dt, tmp, fbuf, (size_t)count, 0);
        } else {
            MPI_Count whole = dt->xsize ? (MPI_Count)((size_t)flen / dt->xsize) : 0;
            if (whole > count) whole = count;
            kumi_dt_external32(dt, fbuf, tmp, (size_t)whole, 1);
            kumi_dt_unpack_range(dt, tmp, (size_t)count, 0, (size_t)whole * dt->size, ubuf);
        }
        free(tmp);
        return MPI_SUCCESS;
    }
    default: {
        const struct kumi_datarep *r = f->urep;
        int rc;
        if (dir == 0 ? !(r->wr || r->wr_c) : !(r->rd || r->rd_c)) {
            /* MPI_CONVERSION_FN_NULL: the data is native */
            if (dir == 0) kumi_dt_pack_range(dt, ubuf, (size_t)count, 0, nb, fbuf);
            else kumi_dt_unpack_range(dt, fbuf, (size_t)count, 0, (size_t)flen < nb ? (size_t)flen : nb, ubuf);
            return MPI_SUCCESS;
        }
        MPI_Datarep_conversion_function *c = dir == 0 ? r->wr : r->rd;
        MPI_Datarep_conversion_function_c *cc = dir == 0 ? r->wr_c : r->rd_c;
        KUMI_CALLBACK(rc = cc ? cc(ubuf, dt->handle, count, fbuf, 0, r->extra)
                              : c(ubuf, dt->handle, (int)count, fbuf, 0, r->extra));
        if (rc != MPI_SUCCESS)
            return kumi_error(MPI_ERR_CONVERSION, "%s: the %s conversion function of datarep \"%s\" failed (%d)", fn,
                              dir == 0 ? "write" : "read", r->name, rc);
        return MPI_SUCCESS;
    }
    }
}
