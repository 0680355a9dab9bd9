/* kt.h: tiny assertion helpers for Kumi's MPI test programs.
 * A failed check prints where and what, and the program exits 1
 * (mpiexec then stops the job and returns non-zero). */
#ifndef KT_H
#define KT_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline int kt_rank_(void)
{
    int init = 0, fin = 0, r = -1;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* Wall-clock seconds on CLOCK_MONOTONIC (one clock for all ranks of a host), for deadlines and
 * elapsed-time checks.  Strict ISO C (-std=c11: tests/scripts/core_mpih.sh) declares no POSIX
 * clock: the calendar time of C11 then. */
static inline double kt_now(void)
{
    struct timespec t;
#ifdef CLOCK_MONOTONIC
    clock_gettime(CLOCK_MONOTONIC, &t);
#else
    timespec_get(&t, TIME_UTC);
#endif
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define KT_FAIL(...) do { \
    fprintf(stderr, "FAIL rank %d %s:%d: ", kt_rank_(), __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fflush(stderr); \
    exit(1); } while (0)

/* the condition's text goes through "%s", so a '%' in it (a modulo) is not read as a conversion */
#define KT_CHECK(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "FAIL rank %d %s:%d: check `%s` failed:", kt_rank_(), __FILE__, __LINE__, #cond); \
    fprintf(stderr, " " __VA_ARGS__); fputc('\n', stderr); fflush(stderr); \
    exit(1); } } while (0)
#define KT_EQ_INT(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ != b_) KT_FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_); } while (0)
#define KT_MPI(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) { \
    char s_[MPI_MAX_ERROR_STRING]; int l_ = 0; MPI_Error_string(rc_, s_, &l_); \
    KT_FAIL("%s returned %d: %s", #call, rc_, s_); } } while (0)
/* Expect an MPI call to fail with error class cls (needs ERRORS_RETURN). */
#define KT_ERRCLASS(call, cls) do { int rc_ = (call), c_ = -1; \
    if (rc_ == MPI_SUCCESS) KT_FAIL("%s succeeded, expected error class %d", #call, (int)(cls)); \
    MPI_Error_class(rc_, &c_); \
    if (c_ != (cls)) { char s_[MPI_MAX_ERROR_STRING]; int l_ = 0; MPI_Error_string(rc_, s_, &l_); \
        KT_FAIL("%s gave class %d (%s), expected %d", #call, c_, s_, (int)(cls)); } } while (0)

/* n bytes of a pattern that differs with seed; kt_check_fill fails unless b holds them */
static inline void kt_fill(unsigned char *b, int n, int seed)
{
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(seed * 31 + i * 7 + 1);
}
static inline void kt_check_fill(const unsigned char *b, int n, int seed, const char *what)
{
    for (int i = 0; i < n; i++)
        if (b[i] != (unsigned char)(seed * 31 + i * 7 + 1)) KT_FAIL("%s: byte %d of %d is %d", what, i, n, b[i]);
}
#endif
