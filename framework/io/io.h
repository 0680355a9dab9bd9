/* MPI-IO (MPI-4.1 chapter 14) on POSIX files.
 *
 *   io/file.c     file objects: open / close / delete, size, preallocate,
 *                 group / amode / info (hints), atomicity, sync, error
 *                 handlers, data representations (native, internal,
 *                 external32, MPI_Register_datarep), views, offsets and the
 *                 individual and shared file pointers
 *   io/io_rw.c    data access: the shared implementations of the read and
 *                 write families (data/kumi-bindings.json forwards every
 *                 MPI_File_{,i}{read,write}* to them): explicit offsets,
 *                 individual and shared pointers, ordered, split collective
 *                 and non-blocking forms; independent I/O with pread/pwrite
 *   io/io_coll.c  collective I/O by two-phase aggregation
 *
 * A file's byte stream: the data of a call, packed and converted into the
 * file's representation, lands in the file at the data blocks of the view
 * (the filetype tiled from disp on); an offset (in etypes) is a position in
 * that stream.  Non-blocking calls do their work at once and return a
 * generalized request that is already complete.  The shared file pointer
 * lives in an RMA window on rank 0 of the file's private communicator
 * (atomic MPI_Fetch_and_op), so it is consistent across ranks and hosts.
 * Atomic mode takes POSIX byte-range locks (fcntl) over the span of each
 * access. */
#ifndef KUMI_IO_H
#define KUMI_IO_H

#include "core/core.h"
#include <stdbool.h>
#include <stdint.h>

#define KUMI_MAGIC_FILE 0x4b46494cu   /* "KFIL" */

enum kumi_rep { KUMI_REP_NATIVE, KUMI_REP_INTERNAL, KUMI_REP_EXTERNAL32, KUMI_REP_USER };

/* A data representation registered with MPI_Register_datarep. */
struct kumi_datarep {
    char name[MPI_MAX_DATAREP_STRING];
    MPI_Datarep_conversion_function *rd, *wr;
    MPI_Datarep_conversion_function_c *rd_c, *wr_c;
    MPI_Datarep_extent_function *extent;
    void *extra;
    struct kumi_datarep *next;
};

/* One data block of the filetype: file bytes [foff, foff+len) of a tile hold
 * stream bytes [soff, soff+len) of the tile. */
struct kumi_fblk { MPI_Offset foff, len, soff; };

struct kumi_file {
    uint32_t magic;                 /* KUMI_MAGIC_FILE */
    MPI_File handle;                /* == the object's address */
    struct kumi_comm *comm;         /* private duplicate of the opening communicator */
    MPI_Comm commh;
    int rank, size;
    int fd;
    int amode;
    char *path;
    struct kumi_errhandler *errh;
    struct kumi_info *info;         /* the hints in use (MPI_File_get_info) */
    /* the view */
    MPI_Offset disp;
    struct kumi_dt *etype, *filetype;
    char datarep[MPI_MAX_DATAREP_STRING];
    enum kumi_rep rep;
    const struct kumi_datarep *urep;
    MPI_Offset esize;               /* bytes of one etype in the file */
    MPI_Offset tsize, textent;      /* stream bytes of one filetype tile, and its extent in the file */
    struct kumi_fblk *blk;          /* the data blocks of one tile */
    size_t nblk;
    /* pointers (in etypes, relative to the view) */
    MPI_Offset fp;
    MPI_Win shwin;                  /* the shared pointer (an int64 at rank 0) */
    bool atomic;
    /* split collectives */
    int split;                      /* 0: none; else the kind begun (KUMI_IO_* flags) */
    const void *split_buf;
    MPI_Status split_status;
    int split_rc;
    /* hints */
    MPI_Offset cb_buffer_size;
    int cb_nodes;
    MPI_Offset striping_unit;
    int *aggr;                      /* ranks of the aggregators (cb_nodes of them) */
    int naggr;
    int cb_read;                    /* hint romio_cb_read: KUMI_IO_CB_AUTO, _ENABLE or _DISABLE */
    int cb_write;                   /* hint romio_cb_write: the same for collective writes */
};

/* romio_cb_read: two-phase collective reads always (enable), never (disable:
 * each rank reads its own pieces), or when some rank's pieces are small
 * (automatic, the default: below KUMI_IO_CB_PIECE bytes on average).  Pieces
 * that large cost their transfer rather than a request each; aggregating
 * them only adds two copies and funnels every byte through the aggregators
 * (1 GiB 3-D array at 4 ranks, 1 MiB pieces, from the page cache: 3 to 5x
 * faster read by each rank; already 2x at 64 KiB pieces).  romio_cb_write
 * decides collective writes by the same rule: pieces that large, written by
 * each rank with a pwrite each, cost the page cache copy alone, where the
 * two-phase write adds the exchange (two copies through shared memory) and
 * one more into the window, all of it on the aggregator's core. */
enum { KUMI_IO_CB_AUTO, KUMI_IO_CB_ENABLE, KUMI_IO_CB_DISABLE };
#define KUMI_IO_CB_PIECE ((MPI_Offset)256 << 10)

static inline struct kumi_file *kumi_file_get(MPI_File h) { return kumi_handle_obj(h, KUMI_MAGIC_FILE); }

/* Errors of a call on file f go to its handler; f NULL: the handler of
 * MPI_FILE_NULL (MPI_ERRORS_RETURN unless the program set another). */
int kumi_file_err_handle(struct kumi_file *f, int code);

/* ------------------------------------------------ internal (io/ only) */
/* access kinds */
enum {
    KUMI_IO_WRITE = 1, KUMI_IO_AT = 2, KUMI_IO_SHARED = 4, KUMI_IO_ORDERED = 8,
    KUMI_IO_COLL = 16, KUMI_IO_BEGIN = 32, KUMI_IO_NB = 64
};

/* Stream bytes of count elements of dt in the file's representation. */
MPI_Offset kumi_io_stream_len(const struct kumi_file *f, const struct kumi_dt *dt, MPI_Count count);
/* File offset of stream byte s (the byte itself lies in a data block). */
MPI_Offset kumi_io_file_off(const struct kumi_file *f, MPI_Offset s);
/* Stream bytes whose file offset is below byte b. */
MPI_Offset kumi_io_stream_before(const struct kumi_file *f, MPI_Offset b);
/* Convert between the user's buffer and the stream (dir 0: user -> file). */
int kumi_io_convert(struct kumi_file *f, const char *fn, int dir, void *ubuf, MPI_Count count,
                    struct kumi_dt *dt, unsigned char *fbuf, MPI_Offset flen);
/* The pieces (file offset, length) of stream bytes [s, s+n): calls fn for each
 * in stream order, merging adjacent ones; stops at fn's nonzero return. */
typedef int (*kumi_io_piece_fn)(void *arg, MPI_Offset foff, MPI_Offset len, MPI_Offset bufoff);
int kumi_io_pieces(const struct kumi_file *f, MPI_Offset s, MPI_Offset n, kumi_io_piece_fn fn, void *arg);
/* Independent transfer of n stream bytes at stream offset s (buf: n bytes in
 * the file's representation).  *done: bytes moved (reads stop at the end of file). */
int kumi_io_xfer(struct kumi_file *f, const char *fn, int write, MPI_Offset s, unsigned char *buf, MPI_Offset n,
                 MPI_Offset *done);
/* Collective transfer (two-phase). */
int kumi_io_xfer_all(struct kumi_file *f, const char *fn, int write, MPI_Offset s, unsigned char *buf, MPI_Offset n,
                     MPI_Offset *done);
/* Shared pointer: add delta (etypes) and return the old value. */
int kumi_io_shared_fetch_add(struct kumi_file *f, const char *fn, MPI_Offset delta, MPI_Offset *old);
int kumi_io_shared_set(struct kumi_file *f, const char *fn, MPI_Offset v);
/* The error of a failed system call, as an MPI error class. */
int kumi_io_errno_class(int e);

#endif
