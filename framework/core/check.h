/* Argument checks called by the generated bindings (framework/bindings/mkbindings.py).
 * Each returns MPI_SUCCESS or an error code whose message names the function
 * and the argument. */
#ifndef KUMI_CHECK_H
#define KUMI_CHECK_H

#include "core/core.h"

void kumi_chk_state_fail(const char *fn) __attribute__((noreturn));
#define KUMI_CHECK_STATE(fn) do { \
    if (__builtin_expect(kumi_state != KUMI_STATE_INIT && !kumi_sessions_active, 0)) kumi_chk_state_fail(fn); } while (0)
/* The fast path of a generated binding (rule "fast") is taken only when the
 * state check passes by kumi_state alone and kumi_lock() has nothing to do
 * (no MPI_THREAD_MULTIPLE, no checkpoint tracking): one load each. */
#define KUMI_FAST_ENTRY() (kumi_state == KUMI_STATE_INIT && kumi_lock_flags.any == 0)

int kumi_chk_bad_comm(const char *fn, const char *arg, MPI_Comm h);
int kumi_chk_bad_datatype(const char *fn, const char *arg, MPI_Datatype h);
int kumi_chk_bad_op(const char *fn, const char *arg, MPI_Op h);
int kumi_chk_bad_errhandler(const char *fn, const char *arg, MPI_Errhandler h);
int kumi_chk_bad_win(const char *fn, const char *arg, MPI_Win h);
int kumi_chk_bad_file(const char *fn, const char *arg, MPI_File h);
int kumi_chk_dt_usable_slow(const char *fn, const char *arg, const struct kumi_dt *dt);
static inline bool kumi_ok_dt_usable(const struct kumi_dt *dt) { return dt->predefined || dt->committed; }
static inline int kumi_chk_dt_usable(const char *fn, const char *arg, const struct kumi_dt *dt)
{
    return __builtin_expect(kumi_ok_dt_usable(dt), 1) ? MPI_SUCCESS : kumi_chk_dt_usable_slow(fn, arg, dt);
}
int kumi_chk_count_slow(const char *fn, const char *arg, MPI_Count n);
static inline int kumi_chk_count(const char *fn, const char *arg, MPI_Count n)
{
    return __builtin_expect(n >= 0, 1) ? MPI_SUCCESS : kumi_chk_count_slow(fn, arg, n);
}
int kumi_chk_rank_slow(const char *fn, const char *arg, int r, const struct kumi_comm *c, int kind);
/* The valid cases of a check as a condition (kumi_ok_*): what the check lets
 * through, for the generated bindings' fast paths (binding rule "fast"). */
static inline bool kumi_ok_dest(int r, const struct kumi_comm *c)
{
    return (unsigned)r < (unsigned)kumi_comm_peer_size(c) || r == MPI_PROC_NULL;
}
static inline bool kumi_ok_source(int r, const struct kumi_comm *c)
{
    return (unsigned)r < (unsigned)kumi_comm_peer_size(c) || r == MPI_ANY_SOURCE || r == MPI_PROC_NULL;
}
static inline int kumi_chk_dest(const char *fn, const char *arg, int r, const struct kumi_comm *c)
{
    return __builtin_expect(kumi_ok_dest(r, c), 1) ? MPI_SUCCESS : kumi_chk_rank_slow(fn, arg, r, c, 0);
}
static inline int kumi_chk_source(const char *fn, const char *arg, int r, const struct kumi_comm *c)
{
    return __builtin_expect(kumi_ok_source(r, c), 1) ? MPI_SUCCESS : kumi_chk_rank_slow(fn, arg, r, c, 1);
}
static inline int kumi_chk_root(const char *fn, const char *arg, int r, const struct kumi_comm *c)
{
    /* intercommunicator: MPI_ROOT / MPI_PROC_NULL in the root group, a remote rank in the other */
    if (__builtin_expect(c->inter, 0))
        return r == MPI_ROOT || r == MPI_PROC_NULL || (unsigned)r < (unsigned)c->remote_size
            ? MPI_SUCCESS : kumi_chk_rank_slow(fn, arg, r, c, 2);
    return __builtin_expect((unsigned)r < (unsigned)c->size, 1)
        ? MPI_SUCCESS : kumi_chk_rank_slow(fn, arg, r, c, 2);
}
int kumi_chk_tag_slow(const char *fn, const char *arg, int tag, int recv);
/* the value of MPI_TAG_UB: KUMI_TAG_UB, or what an IMPI job agreed (kumi_set_tag_ub) */
extern int kumi_tag_ub;
static inline bool kumi_ok_tag(int tag, int recv)
{
    return (unsigned)tag <= (unsigned)kumi_tag_ub || (recv && tag == MPI_ANY_TAG);
}
static inline int kumi_chk_tag(const char *fn, const char *arg, int tag, int recv)
{
    return __builtin_expect(kumi_ok_tag(tag, recv), 1) ? MPI_SUCCESS : kumi_chk_tag_slow(fn, arg, tag, recv);
}
/* A derived type that may hold absolute addresses (MPI_BOTTOM, which is NULL,
 * as its buffer): its lowest byte lies above the lowest page a process can
 * map (Linux's mmap_min_addr, 64 KiB by default); a NULL buffer with any other
 * type that carries data is an error. */
static inline bool kumi_dt_absolute(const struct kumi_dt *dt)
{
    return !dt->predefined && dt->true_lb >= 65536;
}
int kumi_chk_op_dt(const char *fn, const struct kumi_op *op, const struct kumi_dt *dt);
int kumi_chk_buf_slow(const char *fn, const char *arg, MPI_Count count, const struct kumi_dt *dt);
static inline int kumi_chk_buf(const char *fn, const char *arg, const void *buf, MPI_Count count,
                               const struct kumi_dt *dt)
{
    return __builtin_expect(buf != NULL || count == 0, 1) ? MPI_SUCCESS
                                                          : kumi_chk_buf_slow(fn, arg, count, dt);
}

/* A pointer to a request handle (MPI_Isend's request, MPI_Wait's, ...): never
 * NULL (MPI_ERR_REQUEST naming the argument). */
int kumi_chk_req_ptr_slow(const char *fn, const char *arg);
static inline int kumi_chk_req_ptr(const char *fn, const char *arg, const MPI_Request *req)
{
    return __builtin_expect(req != NULL, 1) ? MPI_SUCCESS : kumi_chk_req_ptr_slow(fn, arg);
}

/* When an argument matters (binding rule "significant", data/README.md): the
 * generated binding checks an argument only where the standard says it is
 * significant, so that every rank of a collective reaches the same verdict
 * on what it must check.
 *   kumi_sig_root:      this process is the root of a rooted collective (on an
 *                       intercommunicator: it passed MPI_ROOT);
 *   kumi_sig_contrib:   it sends to (gather, reduce) or receives from
 *                       (scatter, bcast) the root: every rank of an
 *                       intracommunicator, the other group's ranks (a rank
 *                       as root) of an intercommunicator;
 *   kumi_sig_part:      it takes part at all (not MPI_PROC_NULL as the root
 *                       of an intercommunicator collective);
 *   kumi_sig_counts:    a count array (elements of elsize bytes: int or
 *                       MPI_Count) of one entry per peer has a nonzero entry
 *                       (or is NULL: the type is checked, the array later). */
static inline bool kumi_sig_root(const struct kumi_comm *c, int root)
{
    return c->inter ? root == MPI_ROOT : c->rank == root;
}
static inline bool kumi_sig_contrib(const struct kumi_comm *c, int root)
{
    return !c->inter || root >= 0;
}
static inline bool kumi_sig_part(const struct kumi_comm *c, int root)
{
    return !c->inter || root != MPI_PROC_NULL;
}
bool kumi_sig_counts(const struct kumi_comm *c, const void *counts, size_t elsize);

/* The code a failed MPI call returns, as the caller's ABI spells it: a
 * foreign-ABI shim (kumi/abi.h: kumi_abi_set_err_out) translates Kumi's codes
 * into its ABI's here, on the error path only, so that its entry points can
 * jump straight into Kumi's.  Every generated entry point applies it once,
 * last, to what it returns. */
extern int (*kumi_err_out_hook)(int code);
#define KUMI_ERR_OUT(rc) (__builtin_expect(kumi_err_out_hook != NULL, 0) ? kumi_err_out_hook(rc) : (rc))

/* Names for messages. */
const char *kumi_dt_name(const struct kumi_dt *dt);
const char *kumi_op_name(const struct kumi_op *op);
static inline struct kumi_errhandler *kumi_errh_get(MPI_Errhandler h) { return kumi_handle_obj(h, KUMI_MAGIC_ERRH); }

#endif
