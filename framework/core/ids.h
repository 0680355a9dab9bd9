/* Every context id and tag range libmpi uses for itself, in one place.
 *
 * Context ids (int32_t, struct kumi_hdr.ctx) come in pairs: ctx (even) for
 * a communicator's point-to-point traffic, ctx + 1 for its collective
 * traffic (coll components, schedules, agreements).  Pairs are agreed by
 * the members of a new communicator (mpi/comm: context-id agreement).
 *
 *   0 .. 2*KUMI_CTX_PAIRS-1       communicators (pair 0 MPI_COMM_WORLD, pair 1
 *                                 MPI_COMM_SELF, pair 2 the hidden bootstrap
 *                                 communicator of MPI_Comm_create_from_group)
 *   KUMI_CTX_IMPI + C (+ 1)       a communicator whose IMPI context id is C (coll/impi's
 *                                 rule over a parent spanning IMPI clients; kumi/impi.h)
 *   KUMI_CTX_PART_HS | ctx        partitioned channels' handshakes (tag: the user's)
 *   KUMI_CTX_PART_CH + n          one partitioned channel end (n: per-process counter)
 *
 * Tags in a communicator's collective context (ctx + 1):
 *   0 .. KUMI_TAG_NBC-1           coll components' own messages (blocking collectives)
 *   KUMI_TAG_NBC ..  0x3fffffff   non-blocking collectives' schedules (2^17 slots of 4096)
 *   KUMI_TAG_PERS .. 0x7fffffff   persistent collectives' schedules (2^18 slots of 4096)
 *   -8 .. -0x40000007             context-id agreements over a group (kumi_ctx_alloc_group)
 *   KUMI_TAG_IDUP_REDUCE, _BCAST  MPI_Comm_idup's agreement rounds
 *   KUMI_TAG_IC_CTX, _MERGE       intercommunicator creation (the leaders' exchange)
 *   KUMI_TAG_CAD .. -0x60000001   MPIX_Cad schedules (2^17 slots of 4096)
 * Tags in a window's communicator's point-to-point context: KUMI_TAG_RMA_*.
 * User tags are 0 .. KUMI_TAG_UB in the point-to-point context only. */
#ifndef KUMI_IDS_H
#define KUMI_IDS_H

#define KUMI_CTX_PAIRS       4096
#define KUMI_CTX_MASK_WORDS  (KUMI_CTX_PAIRS / 32)   /* a mask of pairs, one bit each */
#define KUMI_CTX_WORLD       0
#define KUMI_CTX_SELF        2
#define KUMI_CTX_BOOT        4
#define KUMI_CTX_IMPI        0x20000000        /* + IMPI cid < 0x10000000 (kumi/impi.h) */
#define KUMI_CTX_PART_HS     0x40000000
#define KUMI_CTX_PART_CH     0x50000000

#define KUMI_TAG_UB          0x7fffffff        /* value of the MPI_TAG_UB attribute */
#define KUMI_TAG_NBC         0x20000000
#define KUMI_TAG_PERS        0x40000000
#define KUMI_TAG_CAD         (-0x7fffffff - 1)
#define KUMI_TAG_AGREE_LO    (-0x40000007)     /* the lowest tag of kumi_ctx_alloc_group */
#define KUMI_TAG_IDUP_REDUCE (-0x40000010)
#define KUMI_TAG_IDUP_BCAST  (-0x40000011)
#define KUMI_TAG_IC_CTX      (-0x40000020)
#define KUMI_TAG_IC_MERGE    (-0x40000021)
#define KUMI_TAG_RMA_CTL     1
#define KUMI_TAG_RMA_DATA    2
#define KUMI_TAG_RMA_REPLY   3

/* Keys of context-id agreements (high word: the carrier's context id). */
#define KUMI_KEY_COMM        0xffffffffu        /* over a whole parent */
#define KUMI_KEY_IDUP        0xfffffffeu        /* the idups of a parent */
#define KUMI_KEY_BOOT        ((uint64_t)KUMI_CTX_BOOT << 32)   /* carried by the bootstrap communicator */

_Static_assert(KUMI_TAG_IC_MERGE > -0x60000001 && KUMI_TAG_IDUP_BCAST < KUMI_TAG_AGREE_LO &&
               KUMI_TAG_IC_CTX < KUMI_TAG_IDUP_BCAST, "the negative tag ranges overlap");
#endif
