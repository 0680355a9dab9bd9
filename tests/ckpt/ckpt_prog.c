/* The test program of tests/scripts/ckpt_image.sh: floating-point work on
 * static data, heap, stack and an anonymous mapping, appending to a file,
 * with a checkpoint (kumi_ckpt_image_write) at iteration K.
 *
 *   ckpt_prog OUT N K IMAGE [run|hang|threads|none [K2 IMAGE2]]
 *     run      checkpoint at K and go on to the end (the default)
 *     hang     checkpoint at K, print "written" and wait to be killed
 *     blocker  start a thread that blocks every signal, then ask for the checkpoint:
 *              expects the refusal (the other threads cannot be stopped)
 *     none     no checkpoint (the uninterrupted reference run)
 *   K2 IMAGE2: a second checkpoint at K2 (in a restarted process too)
 * With CKPT_THREADS set: two threads compute on arrays of their own, a third
 * waits on a condition variable, all joined at the end (in the checksum).
 * Prints "restarted" (stderr) when the checkpoint call returned in a restarted
 * process, and at the end "checksum HEX" over every array's bits. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "kumi_ckpt_image.h"

#define NSTAT 4096
#define NHEAP (1 << 20)
#define NMAP (1 << 18)
#define NSTACK 512

static double stat_data[NSTAT];
static double scale = 1.0000001;

static uint64_t mix(uint64_t h, const double *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, &a[i], 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    return h;
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static volatile int blocking;
static void *blocker(void *arg)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    blocking = 1;
    for (;;) pause();
    return arg;
}

#define NWORK 8192
struct work {
    double a[NWORK];
    int iters, id;
    volatile int done;
};
static void *worker(void *arg)
{
    struct work *w = arg;
    for (int it = 0; it < w->iters; it++)
    {
        for (int i = 0; i < NWORK; i++) w->a[i] = w->a[i] * 0.9999 + sin(i + it + w->id) * 1e-3;
        w->done = it + 1;
    }
    return NULL;
}
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static double waited;
static void *waiter(void *arg)
{
    pthread_mutex_lock(&mtx);
    while (!go) pthread_cond_wait(&cond, &mtx);
    waited = 42.5;
    pthread_mutex_unlock(&mtx);
    return arg;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ckpt_prog OUT N K IMAGE [run|hang|threads|none]\n");
        return 2;
    }
    const char *out = argv[1], *image = argv[4], *mode = argc > 5 ? argv[5] : "run";
    int n = atoi(argv[2]), k = atoi(argv[3]), k2 = argc > 7 ? atoi(argv[6]) : -1;
    pid_t pid0 = getpid();
    /* signal state the restart must bring back: a handler, a blocked signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t blk;
    sigemptyset(&blk);
    sigaddset(&blk, SIGUSR2);
    sigprocmask(SIG_BLOCK, &blk, NULL);
    int pfd[2];                      /* a pipe: not restored, its numbers reserved */
    if (pipe(pfd) != 0) return 2;
    char cwd0[4096];
    if (!getcwd(cwd0, sizeof cwd0)) return 2;
    double stack_data[NSTACK];
    double *heap = malloc(NHEAP * sizeof *heap);
    double *map = mmap(NULL, NMAP * sizeof *map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FILE *f = fopen(out, "a");
    if (!heap || map == MAP_FAILED || !f) { perror("ckpt_prog: setup"); return 2; }
    for (int i = 0; i < NSTAT; i++) stat_data[i] = sin(i * 0.001);
    for (int i = 0; i < NHEAP; i++) heap[i] = cos(i * 1e-6);
    for (int i = 0; i < NMAP; i++) map[i] = 1.0 / (i + 1);
    for (int i = 0; i < NSTACK; i++) stack_data[i] = sqrt(i);
    int use_threads = getenv("CKPT_THREADS") != NULL;
    pthread_t tw[2], tc;
    static struct work w[2];
    if (use_threads) {
        for (int t = 0; t < 2; t++) {
            w[t].iters = 400;
            w[t].id = t;
            for (int i = 0; i < NWORK; i++) w[t].a[i] = i * 0.5;
            if (pthread_create(&tw[t], NULL, worker, &w[t]) != 0) return 2;
        }
        if (pthread_create(&tc, NULL, waiter, NULL) != 0) return 2;
    }
    for (int it = 0; it < n; it++) {
        if (it == k2) {
            char err[512];
            int rc = kumi_ckpt_image_write(argv[7], 0, err, sizeof err);
            if (rc < 0) {
                fprintf(stderr, "%s\n", err);
                return 3;
            }
            if (rc == KUMI_CKPT_RESTARTED) fprintf(stderr, "restarted at %d\n", k2);
        }
        if (it == k && strcmp(mode, "none") != 0) {
            pthread_t t;
            if (!strcmp(mode, "blocker")) {
                if (pthread_create(&t, NULL, blocker, NULL) != 0) return 2;
                while (!blocking) usleep(1000);
            }
            char err[512];
            fflush(stdout);
            struct timespec t0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            int rc = kumi_ckpt_image_write(image, 0, err, sizeof err);
            if (rc < 0) {
                fprintf(stderr, "%s\n", err);
                return 3;
            }
            if (rc == KUMI_CKPT_RESTARTED) {
                fprintf(stderr, "restarted (pid %s)\n", getpid() != pid0 ? "changed" : "same");
                if (use_threads) fprintf(stderr, "workers at %d and %d of 400\n", w[0].done, w[1].done);
                /* the vDSO (moved back to its old place), the signal state, raise() (glibc's cached tid) */
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                fprintf(stderr, "clock %s\n", t1.tv_sec > t0.tv_sec || (t1.tv_sec == t0.tv_sec && t1.tv_nsec >= t0.tv_nsec)
                                                   ? "ok" : "went back");
                raise(SIGUSR1);
                sigset_t cur;
                sigprocmask(SIG_BLOCK, NULL, &cur);
                fprintf(stderr, "signals %s %s\n", got_usr1 ? "handler-ran" : "handler-missing",
                        sigismember(&cur, SIGUSR2) ? "usr2-blocked" : "usr2-unblocked");
                const char *const *env = kumi_ckpt_image_restart_env();
                const char *v = NULL;
                for (int i = 0; env && env[i]; i++)
                    if (!strncmp(env[i], "CKPT_TEST_RESTART=", 18)) v = env[i] + 18;
                fprintf(stderr, "restart env %s, saved env %s\n", v ? v : "(none)",
                        getenv("CKPT_TEST_RESTART") ? getenv("CKPT_TEST_RESTART") : "(none)");
                fprintf(stderr, "pipe %s, fd 9 %s\n",
                        fcntl(pfd[1], F_GETFD) != -1 && write(pfd[1], "x", 1) == -1 && errno == EBADF ? "reserved" : "wrong",
                        fcntl(9, F_GETFD) == -1 ? "closed" : "open");
                char cwd1[4096];
                fprintf(stderr, "cwd %s\n", getcwd(cwd1, sizeof cwd1) && !strcmp(cwd0, cwd1) ? "same" : "changed");
                /* the process works normally: a new allocation, a new mapping */
                char *p = malloc(1 << 20), *q = malloc(100);
                void *m = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (!p || !q || m == MAP_FAILED) { fprintf(stderr, "allocation after restart failed\n"); return 4; }
                memset(p, 1, 1 << 20);
                free(p);
                free(q);
                munmap(m, 1 << 16);
                /* small blocks: malloc extends the heap with brk, which must go on from the saved heap */
                void *b0 = sbrk(0), *blk[3000];
                for (int i = 0; i < 3000; i++) memset(blk[i] = malloc(700), 2, 700);
                fprintf(stderr, "brk %s\n", (char *)sbrk(0) > (char *)b0 ? "grew" : "did not grow");
                for (int i = 0; i < 3000; i++) free(blk[i]);
            } else if (!strcmp(mode, "hang")) {
                printf("written\n");
                fflush(stdout);
                for (;;) pause();
            }
        }
        double acc = 0;
        for (int i = 0; i < NSTAT; i++) { stat_data[i] = stat_data[i] * scale + 1e-9 * it; acc += stat_data[i]; }
        for (int i = 0; i < NHEAP; i += 7) { heap[i] = fma(heap[i], 0.999999, acc * 1e-12); }
        for (int i = 0; i < NMAP; i++) map[i] = map[i] * 0.5 + heap[i % NHEAP] * 0.25;
        for (int i = 0; i < NSTACK; i++) stack_data[i] += map[i] * 1e-3;
        fprintf(f, "%d %.17g %.17g\n", it, acc, stack_data[it % NSTACK]);
    }
    fclose(f);
    uint64_t h = 0xcbf29ce484222325ull;
    if (use_threads) {
        pthread_mutex_lock(&mtx);
        go = 1;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&mtx);
        for (int t = 0; t < 2; t++) pthread_join(tw[t], NULL);
        pthread_join(tc, NULL);
        h = mix(h, w[0].a, NWORK);
        h = mix(h, w[1].a, NWORK);
        h = mix(h, &waited, 1);
    }
    h = mix(h, stat_data, NSTAT);
    h = mix(h, heap, NHEAP);
    h = mix(h, map, NMAP);
    h = mix(h, stack_data, NSTACK);
    printf("checksum %016llx\n", (unsigned long long)h);
    return 0;
}
