/* Unit tests (tests/unit): small checking helpers.
 *
 * Each test is one program that calls the library's internal functions in
 * process (linked statically against framework/libkumi_core.la), prints one
 * line per failed check (file:line, what was expected, what came) and a
 * summary, and exits 1 if any check failed.  Random inputs come from
 * ut_rand() with a fixed seed that the program prints (KUMI_TEST_SEED=N
 * replays another). */
#ifndef KUMI_UT_H
#define KUMI_UT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ut_checks, ut_failed;
static const char *ut_case = "";

#define UT_CASE(name) (ut_case = (name))

static void ut_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4), unused));
static void ut_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    ut_failed++;
    fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, ut_case);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* CHECK(cond, "format", ...): the message says what was wrong. */
#define CHECK(cond, ...) \
    do { ut_checks++; if (!(cond)) ut_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_INT(got, want) \
    do { long long g_ = (long long)(got), w_ = (long long)(want); ut_checks++; \
         if (g_ != w_) ut_fail(__FILE__, __LINE__, "%s is %lld, expected %lld", #got, g_, w_); } while (0)
#define CHECK_PTR(got, want) \
    do { const void *g_ = (got), *w_ = (want); ut_checks++; \
         if (g_ != w_) ut_fail(__FILE__, __LINE__, "%s is %p, expected %p (%s)", #got, g_, w_, #want); } while (0)
/* s contains every one of the NULL-terminated needles */
#define CHECK_HAS(s, ...) \
    do { const char *s_ = (s); const char *n_[] = { __VA_ARGS__, NULL }; ut_checks++; \
         for (int i_ = 0; n_[i_]; i_++) \
             if (!s_ || !strstr(s_, n_[i_])) { \
                 ut_fail(__FILE__, __LINE__, "message \"%s\" does not contain \"%s\"", s_ ? s_ : "(null)", n_[i_]); \
                 break; } } while (0)

/* KNOWN(cond, "format", ...): a problem of today's code that is reported but
 * not yet fixed (in a file this test's author does not own).  It prints
 * "KNOWN PROBLEM" and does not fail; once cond holds it says so, and the
 * KNOWN should become a CHECK. */
static int ut_known_open;
#define KNOWN(cond, ...) \
    do { if (cond) printf("known problem fixed at %s:%d: make it a CHECK\n", __FILE__, __LINE__); \
         else { ut_known_open++; printf("KNOWN PROBLEM (%s:%d): ", __FILE__, __LINE__); printf(__VA_ARGS__); \
                printf("\n"); } } while (0)

/* xorshift64*: the same sequence on every machine */
static uint64_t ut_state = 1;
static uint64_t ut_seed_value;
__attribute__((unused)) static void ut_seed(uint64_t dflt)
{
    const char *e = getenv("KUMI_TEST_SEED");
    ut_seed_value = e && *e ? strtoull(e, NULL, 0) : dflt;
    ut_state = ut_seed_value ? ut_seed_value : 1;
    printf("seed %" PRIu64 " (KUMI_TEST_SEED=%" PRIu64 " replays it)\n", ut_seed_value, ut_seed_value);
}
__attribute__((unused)) static uint64_t ut_rand(void)
{
    ut_state ^= ut_state >> 12;
    ut_state ^= ut_state << 25;
    ut_state ^= ut_state >> 27;
    return ut_state * 0x2545f4914f6cdd1dULL;
}
/* uniform in [lo, hi] */
__attribute__((unused)) static long long ut_range(long long lo, long long hi)
{
    return lo + (long long)(ut_rand() % (uint64_t)(hi - lo + 1));
}

/* Summary line and exit status. */
__attribute__((unused)) static int ut_done(const char *name)
{
    if (ut_known_open) printf("%d known problem(s) left (not failures)\n", ut_known_open);
    if (ut_failed) {
        printf("%s: %d of %d checks failed\n", name, ut_failed, ut_checks);
        return 1;
    }
    printf("%s: all %d checks passed\n", name, ut_checks);
    return 0;
}

#endif
