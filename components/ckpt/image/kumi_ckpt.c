/* kumi_ckpt: ask a running job for a checkpoint, or describe one.
 *
 *   kumi_ckpt PID             checkpoint the job of mpiexec PID (sends it SIGQUIT;
 *                             the job must run with mpiexec --ckpt)
 *   kumi_ckpt --info DIR [-v] print DIR/manifest (tools/mpiexec/ckpt.c) and check
 *                             every image it names (complete, undamaged, of this
 *                             back end, written by the rank's process the manifest
 *                             names); -v describes each image too
 * Exit status 0, or 1 with a message (a process that is not mpiexec, a
 * missing or malformed manifest, a damaged image). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kumi_ckpt_image.h"
#include "ckpt_image.h"

/* A sound image must also be the one its rank wrote: the writer's pid and
 * the size the manifest recorded (kumi_restart checks the same). */
static int written_by(const char *path, int pid, long long bytes, char *err, size_t len)
{
    struct ci_header h;
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && fstat(fd, &sb) == 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
    if (fd >= 0) close(fd);
    if (!ok) {
        snprintf(err, len, "cannot read it: %s", strerror(errno));
        return -1;
    }
    if ((long long)h.pid != pid || (long long)sb.st_size != bytes) {
        if (snprintf(err, len, "written by process %lld (%.*s), %lld bytes, not by the manifest's process %d, %lld "
                     "bytes: an image of another job or program", (long long)h.pid, (int)sizeof h.program, h.program,
                     (long long)sb.st_size, pid, bytes) < 0)
            err[0] = 0;
        return -1;
    }
    return 0;
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "Usage: kumi_ckpt PID              checkpoint the job of mpiexec PID (it runs with --ckpt)\n"
               "       kumi_ckpt --info DIR [-v]  describe the checkpoint in DIR and check its images\n");
    return rc;
}

static int request(const char *arg)
{
    char *end;
    errno = 0;
    long pid = strtol(arg, &end, 10);
    if (errno || *end || pid <= 0 || pid > INT_MAX) {
        fprintf(stderr, "kumi_ckpt: '%s' is not a process id (of mpiexec)\n", arg);
        return 1;
    }
    char path[64], comm[64] = "";
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "kumi_ckpt: no process %ld\n", pid);
        return 1;
    }
    if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
    fclose(f);
    comm[strcspn(comm, "\n")] = 0;
    if (strcmp(comm, "mpiexec") != 0 && strcmp(comm, "mpirun") != 0) {
        fprintf(stderr, "kumi_ckpt: process %ld is '%s', not mpiexec\n", pid, comm);
        return 1;
    }
    if (kill((pid_t)pid, SIGQUIT) != 0) {
        fprintf(stderr, "kumi_ckpt: cannot signal mpiexec %ld: %s\n", pid, strerror(errno));
        return 1;
    }
    printf("kumi_ckpt: checkpoint requested from mpiexec %ld (it reports the result on its stderr)\n", pid);
    return 0;
}

static int info(const char *dir, int verbose)
{
    char path[PATH_MAX], line[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/manifest", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "kumi_ckpt: %s: %s (not a checkpoint folder?)\n", path, strerror(errno));
        return 1;
    }
    int nranks = -1, seen = 0, bad = 0, first = 1;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (first) {
            first = 0;
            if (strcmp(line, "kumi-checkpoint 1") != 0) {
                fprintf(stderr, "kumi_ckpt: %s is not a Kumi checkpoint manifest (first line '%s')\n", path, line);
                fclose(f);
                return 1;
            }
            printf("checkpoint %s\n", dir);
            continue;
        }
        int r, pid;
        char host[256], img[PATH_MAX];
        long long bytes;
        if (sscanf(line, "ranks %d", &nranks) == 1) {
            printf("  %s\n", line);
        } else if (sscanf(line, "rank %d host %255s pid %d image %4095s bytes %lld", &r, host, &pid, img, &bytes) == 5) {
            char ip[2 * PATH_MAX + 2], err[512];
            snprintf(ip, sizeof ip, "%s/%s", dir, img);
            int fd = verbose ? 1 : open("/dev/null", O_WRONLY);
            if (verbose) fflush(stdout);
            int rc = kumi_ckpt_image_info(ip, fd, err, sizeof err);
            if (!verbose && fd >= 0) close(fd);
            if (rc == 0) rc = written_by(ip, pid, bytes, err, sizeof err);
            if (rc == 0) printf("  rank %d: %s on %s (pid %d), %.1f MB: ok\n", r, img, host, pid, (double)bytes / 1e6);
            else {
                printf("  rank %d: %s on %s (pid %d): DAMAGED: %s\n", r, img, host, pid, err);
                bad++;
            }
            seen++;
        } else {
            printf("  %s\n", line);
        }
    }
    fclose(f);
    if (nranks < 0 || seen != nranks) {
        fprintf(stderr, "kumi_ckpt: %s: %d rank line%s for %d rank%s: incomplete manifest\n", path, seen,
                seen == 1 ? "" : "s", nranks, nranks == 1 ? "" : "s");
        return 1;
    }
    if (bad) {
        fprintf(stderr, "kumi_ckpt: %d damaged image%s in %s\n", bad, bad == 1 ? "" : "s", dir);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) return usage(stdout, 0);
    if (argc >= 3 && strcmp(argv[1], "--info") == 0) {
        int verbose = argc >= 4 && strcmp(argv[3], "-v") == 0;
        if (argc > 4 || (argc == 4 && !verbose)) return usage(stderr, 1);
        return info(argv[2], verbose);
    }
    if (argc == 2 && argv[1][0] != '-') return request(argv[1]);
    return usage(stderr, 1);
}
