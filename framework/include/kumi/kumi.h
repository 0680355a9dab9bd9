/* Kumi: things every layer and component shares.
 * Components include only framework/include/kumi/ headers (and mpi.h). */
#ifndef KUMI_KUMI_H
#define KUMI_KUMI_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols that components and tools may call; everything else in libmpi is hidden. */
#define KUMI_EXPORT __attribute__((visibility("default")))
#define KUMI_HIDDEN __attribute__((visibility("hidden")))

#define KUMI_VERSION_STRING "0.1.0"

/* Return values of framework/component hooks that are not MPI error codes. */
#define KUMI_OK            0
#define KUMI_UNAVAILABLE  (-1)   /* component cannot run here (reason given) */

/* Diagnostics.  Nothing is printed in a normal run; KUMI_VERBOSE=N (or the
 * parameter base_verbose) enables levels up to N. */
KUMI_EXPORT extern int kumi_verbose_level;
KUMI_EXPORT void kumi_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A message the user must see (error context): always printed on stderr,
 * prefixed with "kumi[rank]: ". */
KUMI_EXPORT void kumi_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Create an MPI error code of class `cls` that carries a detailed message
 * (retrievable through MPI_Error_string).  fmt should name the function and
 * the argument: "MPI_Send: invalid rank 7 in a communicator of size 4". */
KUMI_EXPORT int kumi_error(int cls, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Identity of this process within the job (valid after MPI_Init began). */
KUMI_EXPORT int kumi_world_rank(void);
KUMI_EXPORT int kumi_world_size(void);
/* MPI_TAG_UB of this job (core/check.c): an IMPI job takes the agreed IMPI_Tag_ub
 * (p2p/impi, in MPI_Init); out of 1 .. 2^31-1 it goes back to Kumi's own. */
KUMI_EXPORT void kumi_set_tag_ub(int ub);
KUMI_EXPORT const char *kumi_hostname(void);
/* This host's identity for "same host?" decisions (shared memory, CMA,
 * loopback): "hostname/boot id/network namespace", so two network
 * namespaces of one machine are two hosts, as two machines are, even with
 * the same host name.  Published as "kumi.hostid" by MPI_Init. */
KUMI_EXPORT const char *kumi_host_id(void);
/* 1 if world rank r is on this host (its "kumi.hostid" is ours; r == me: 1). */
KUMI_EXPORT int kumi_same_host(int r);
/* The name under which this process's host is known to the job, when the
 * rpim component knows it better than gethostname() (rpim/pmix: the node's
 * name in the resource manager, unique per node even where nodes share a
 * host name).  Set in client_init, before anything is put; every component
 * compares host names against kumi_hostname(). */
KUMI_EXPORT void kumi_set_hostname(const char *name);

/* Monotonic time in seconds. */
KUMI_EXPORT double kumi_time(void);

#ifdef __cplusplus
}
#endif
#endif
