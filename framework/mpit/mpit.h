/* The MPI_T tools interface (MPI 4.1 chapter 15): shared state of
 * framework/mpit.
 *
 *   mpit_cvar.c   MPI_T_init_thread / MPI_T_finalize (nesting), control
 *                 variables (Kumi's registered parameters, by index of the
 *                 parameter registry), enumerations, the event sources
 *   mpit_pvar.c   performance variables (the request layer's kumi_pv
 *                 counters), sessions and handles
 *   mpit_cat.c    categories: one per framework, one per component
 *   mpit_event.c  events (a message arrived unexpected) and their callbacks
 *
 * Every procedure runs under kumi_mpit_mutex (recursive: a callback may call
 * MPI_T again); where it reads the library's queues it takes the library
 * lock first (kumi_lock, held by the progress engine when it raises an
 * event), so the order is always library lock, then this one.  The
 * procedures return the error classes (MPI_T_ERR_*) as they are
 * (data/kumi-bindings.json: direct_return). */
#ifndef KUMI_MPIT_H
#define KUMI_MPIT_H

#include "core/core.h"
#include "registry/registry.h"
#include "request/request.h"
#include <pthread.h>
#include <string.h>

extern pthread_mutex_t kumi_mpit_mutex;
extern int kumi_mpit_refcount;               /* MPI_T_init_thread minus MPI_T_finalize */

/* Enter an MPI_T procedure: NOT_INITIALIZED unless MPI_T is; the mutex is
 * held from here to MPIT_RETURN. */
#define MPIT_ENTER() do { \
    pthread_mutex_lock(&kumi_mpit_mutex); \
    if (kumi_mpit_refcount <= 0) { pthread_mutex_unlock(&kumi_mpit_mutex); return MPI_T_ERR_NOT_INITIALIZED; } \
    kumi_mpit_event_deliver(); \
} while (0)
#define MPIT_RETURN(rc) do { int mpit_rc_ = (rc); pthread_mutex_unlock(&kumi_mpit_mutex); return mpit_rc_; } while (0)

/* The convention for strings (MPI 4.1 sec. 15.3.3): with no buffer or a
 * zero length, *len gets the length the string needs (with its NUL); else
 * at most *len - 1 characters and a NUL are stored and *len gets the
 * number stored (with the NUL). */
void kumi_mpit_string(const char *s, char *buf, int *len);

/* The predefined enumeration of bool control variables ("false", "true"). */
MPI_T_enum kumi_mpit_bool_enum(void);

/* Verbosity (MPI_T_VERBOSITY_*) of a parameter level 1..9. */
int kumi_mpit_verbosity(int level);

/* Timestamps of the one event source: nanoseconds of CLOCK_MONOTONIC. */
MPI_Count kumi_mpit_now(void);

/* Categories (mpit_cat.c): bring the table up to date with the parameter
 * registry (new frameworks or components add categories and count as a
 * change, MPI_T_category_changed). */
void kumi_mpit_cat_refresh(void);
/* The category of parameter i / of pvar i / of event i: its framework and
 * component names ("" for a framework-level one). */
void kumi_mpit_pvar_owner(int i, const char **fw, const char **comp);
int kumi_mpit_pvar_count(void);
void kumi_mpit_pvar_setup(void);           /* the table (once: at the first MPI_T_init_thread) */
void kumi_mpit_pvar_cleanup(void);         /* sessions and handles, at the last MPI_T_finalize */
int kumi_mpit_event_count(void);
void kumi_mpit_event_owner(int i, const char **fw, const char **comp);
void kumi_mpit_event_deliver(void);        /* deferred callbacks (MPI_T_CB_REQUIRE_NONE) */
void kumi_mpit_event_cleanup(void);

#endif
