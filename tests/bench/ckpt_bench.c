/* tests/bench/ckpt-bench.sh's program: fills SIZE MiB of heap, then times
 * kumi_ckpt_image_write (ckpt/image).  Restarted, it checks the data and
 * exits at once (the script times kumi_restart as a whole).
 *   ckpt_bench SIZE_MB IMAGE [fsync] */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kumi_ckpt_image.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ckpt_bench SIZE_MB IMAGE [fsync]\n");
        return 2;
    }
    size_t n = (size_t)atol(argv[1]) << 20;
    uint64_t *a = malloc(n);
    if (!a) return 2;
    for (size_t i = 0; i < n / 8; i++) a[i] = i * 0x9e3779b97f4a7c15ull;
    char err[512];
    double t0 = now();
    int rc = kumi_ckpt_image_write(argv[2], argc > 3 ? KUMI_CKPT_FSYNC : 0, err, sizeof err);
    double t1 = now();
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (rc == KUMI_CKPT_RESTARTED) {
        for (size_t i = 0; i < n / 8; i += 4096)
            if (a[i] != i * 0x9e3779b97f4a7c15ull) {
                fprintf(stderr, "ckpt_bench: wrong data after the restart at word %zu\n", i);
                return 1;
            }
        printf("restarted ok\n");
        return 0;
    }
    struct stat sb;
    if (stat(argv[2], &sb) != 0) return 1;
    printf("write_seconds %.6f image_bytes %lld\n", t1 - t0, (long long)sb.st_size);
    return 0;
}
