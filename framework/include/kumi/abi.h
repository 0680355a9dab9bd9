/* kumi/abi.h: what libmpi offers the foreign-ABI shims (components/abi)
 * beyond the MPI procedures, which they reach through the non-colliding
 * entries kumi_abi_MPI_X (aliases of PMPI_X, generated with the bindings).
 *
 * A shim translates the callbacks a foreign program registers.  Those with
 * an extra_state argument (attribute copy/delete, generalized requests) it
 * wraps through that argument.  The others (user reduction ops, error
 * handlers) have none, so libmpi takes a context pointer with them here and
 * hands it back on every call: the shim's trampoline finds the foreign
 * function and converts the native handles it is given.
 *
 * These functions follow the rules of the MPI procedures they mirror (state
 * checks, the library lock, error classes); their errors go through the
 * default error handler (MPI_COMM_WORLD's) like MPI_Op_create's, and what they
 * return passes kumi_abi_set_err_out's translation as the procedures' does. */
#ifndef KUMI_ABI_H
#define KUMI_ABI_H

#include <mpi.h>
#include <kumi/kumi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A reduction with a context: len elements of datatype (a native handle),
 * never split at INT_MAX as MPI_User_function's int count would be. */
typedef void (kumi_abi_op_fn)(void *invec, void *inoutvec, MPI_Count len, MPI_Datatype datatype, void *ctx);
/* MPI_Op_create / MPI_Op_create_c with a context. */
KUMI_EXPORT int kumi_abi_op_create(kumi_abi_op_fn *fn, void *ctx, int commute, MPI_Op *op);

/* An error handler with a context: handle points at the native handle of
 * the object (an MPI_Comm, MPI_Win, MPI_File or MPI_Session, as objkind
 * says), errcode at the error code, as MPI_Comm_errhandler_function's
 * arguments do. */
enum { KUMI_ABI_ERRH_COMM = 1, KUMI_ABI_ERRH_WIN, KUMI_ABI_ERRH_FILE, KUMI_ABI_ERRH_SESSION };
typedef void (kumi_abi_errhandler_fn)(int objkind, void *handle, int *errcode, void *ctx);
/* MPI_Comm_create_errhandler, MPI_Win_..., MPI_File_..., MPI_Session_... with a context. */
KUMI_EXPORT int kumi_abi_errhandler_create(int objkind, kumi_abi_errhandler_fn *fn, void *ctx,
                                           MPI_Errhandler *errhandler);

/* The error codes a failed call returns, in the shim's ABI: fn (NULL: none)
 * translates each code (Kumi's class, detailed code or user code) that an MPI
 * procedure or a function of this header returns, after the error handler
 * ran (the handler itself gets Kumi's code).  Codes in statuses, and those a
 * program passes in, are the shim's to translate.  One per process: the last
 * call wins. */
KUMI_EXPORT void kumi_abi_set_err_out(int (*fn)(int code));

#ifdef __cplusplus
}
#endif
#endif
