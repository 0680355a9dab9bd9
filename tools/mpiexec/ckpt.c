/* mpiexec: coordinated checkpoints (issue 20; protocol in kumi/launch_proto.h).
 *
 * With --ckpt (or --ckpt-dir, --checkpoint-and-stop) the ranks run with
 * kumi_ckpt_enable=1, and SIGQUIT to mpiexec (kumi_ckpt PID sends it)
 * starts a checkpoint: CKPT to every rank; once every rank answered
 * CKPT_READY, CKPT_GO to all (go 0 when one refused, or had not called
 * MPI_Init, or had finalized or exited); once every rank answered CKPT_DONE,
 * the manifest DIR/manifest is written (to a temporary name, renamed) when
 * all images were written, and a line says what happened:
 *     mpiexec: checkpoint 1 written to DIR: 4 images, 37.2 MB, 0.41 s
 *     mpiexec: checkpoint 1 not written: rank 2: <reason>
 * With --checkpoint-and-stop the job then ends (exit status 0; the ranks
 * are killed once their images are written).  One checkpoint at a time: a
 * request during another is ignored with a message.
 *
 * Each checkpoint's images have names of their own (image.r<rank>.j<job
 * id>.c<count>), and the manifest is replaced in one rename: a folder
 * always holds one complete checkpoint, the last one written (a job that
 * dies during a checkpoint leaves the previous one usable); the images of
 * the replaced manifest are then removed.
 *
 * The manifest (text, one "key value" per line):
 *     kumi-checkpoint 1
 *     kumi-version 0.1.0
 *     time 1764322000 2026-11-28T09:46:40Z
 *     jobid 12345
 *     ranks 4
 *     backend ckpt/image
 *     program /path/to/prog
 *     cwd /where/mpiexec/ran
 *     rank 0 host node1 pid 4242 image image.r0.j4240.c1 bytes 9437184
 *     ...
 * (kumi_ckpt --info DIR prints it and checks the images.)
 *
 * Across hosts (ranks behind per-host proxies, remote.c): CKPT and CKPT_GO
 * travel to the ranks as TORANK frames (down the tree of proxies), the
 * answers come back as the proxy's CKPT frames (proxy_proto.h); a proxy
 * answers for a rank of its host that has no control connection (not in
 * MPI_Init yet, or gone) or has finalized.  Each rank writes its image into
 * DIR from its own host, so DIR must be one shared folder (the same path on
 * every host: a shared file system); the manifest names each rank's host
 * as mpiexec reached it (the -host / --hostfile name).  A host lost during
 * a checkpoint fails it ("checkpoint N not written: host H was lost ...")
 * and, as any lost host, ends the job.
 *
 * Restart across hosts: mpiexec --restart DIR places rank r on the host the
 * manifest names for it (through proxies, as -host would) unless -host /
 * --hostfile / --launcher gives another placement; every proxy starts
 * kumi_restart IMAGE for each of its ranks (START's image list), on its
 * host, with the new job's environment (ports, secret, job id). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <kumi/kumi.h>
#include "mpiexec.h"

enum { CK_IDLE, CK_READY, CK_DONE };

static struct {
    int phase;
    unsigned seq;
    unsigned flags;
    char dir[PATH_MAX];
    int *state;          /* per rank: 0 waiting, 1 answered ok, 2 refused / failed / gone, 3 not asked */
    char **text;         /* per rank: image name or reason */
    double t0;
    int first;           /* the rank that failed first, or -1 */
} ck;

static void ck_set(int r, int st, const char *text, size_t tl)
{
    ck.state[r] = st;
    if ((st == 2 || st == 3) && ck.first < 0) ck.first = r;
    free(ck.text[r]);
    ck.text[r] = malloc(tl + 1);
    if (ck.text[r]) {
        memcpy(ck.text[r], text, tl);
        ck.text[r][tl] = 0;
    }
}

static void send_u32s(struct mx_job *job, int r, int type, uint32_t a, uint32_t b, const char *s)
{
    struct mx_buf f = { 0 };
    size_t sl = s ? strlen(s) : 0;
    mx_frame_begin(&f, type, 8 + (s ? 4 + sl : 0));
    mx_buf_u32(&f, a);
    mx_buf_u32(&f, b);
    if (s) {
        mx_buf_u32(&f, (uint32_t)sl);
        mx_buf_put(&f, s, sl);
    }
    if (job->rank_frame_hook) job->rank_frame_hook(job, r, f.data, f.len);   /* behind a proxy */
    else mx_ctl_send_frame(job, r, f.data, f.len);
    mx_buf_free(&f);
}

/* A rank that can still be told something: its control connection, or its
 * proxy (remote.c) while it runs. */
static int reachable(struct mx_job *job, int r)
{
    return job->rank_frame_hook ? job->ranks[r].state == MX_RANK_RUNNING : job->ranks[r].conn != NULL;
}

static const char *first_failure(struct mx_job *job, int *rank)
{
    if (ck.first >= 0 && ck.first < job->n && (ck.state[ck.first] == 2 || ck.state[ck.first] == 3)) {
        *rank = ck.first;
        return ck.text[ck.first] ? ck.text[ck.first] : "?";
    }
    for (int r = 0; r < job->n; r++)
        if (ck.state[r] == 2 || ck.state[r] == 3) {
            *rank = r;
            return ck.text[r] ? ck.text[r] : "?";
        }
    return NULL;
}

static int write_manifest(struct mx_job *job, double *mb)
{
    char path[PATH_MAX + 32], tmp[PATH_MAX + 64], host[256] = "localhost", cwd[PATH_MAX] = "";
    snprintf(path, sizeof path, "%s/manifest", ck.dir);
    snprintf(tmp, sizeof tmp, "%s/.manifest.tmp.%ld", ck.dir, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        mx_msg("checkpoint %u: cannot write %s: %s", ck.seq, tmp, strerror(errno));
        return -1;
    }
    gethostname(host, sizeof host - 1);
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
    time_t now = time(NULL);
    struct tm tm;
    char when[64];
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(f, "kumi-checkpoint 1\nkumi-version %s\ntime %lld %s\njobid %ld\nranks %d\nbackend ckpt/image\n",
            KUMI_VERSION_STRING, (long long)now, when, job->jobid, job->n);
    fprintf(f, "program %s\ncwd %s\n", mx_opt.argv && mx_opt.argv[0] ? mx_opt.argv[0] : "?", cwd);
    double bytes = 0;
    for (int r = 0; r < job->n; r++) {
        char img[PATH_MAX + 300];
        struct stat st;
        snprintf(img, sizeof img, "%s/%s", ck.dir, ck.text[r] ? ck.text[r] : "");
        long long sz = stat(img, &st) == 0 ? (long long)st.st_size : -1;
        if (sz > 0) bytes += (double)sz;
        const char *rh = job->rank_frame_hook ? mx_remote_host_of(r) : NULL;   /* behind a proxy */
        fprintf(f, "rank %d host %s pid %d image %s bytes %lld\n", r, rh ? rh : host, (int)job->ranks[r].pid,
                ck.text[r] ? ck.text[r] : "?", sz);
    }
    int bad = ferror(f);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) bad = 1;
    if (fclose(f) != 0) bad = 1;
    /* the images of the manifest replaced: removed once the new one is in place */
    char **old = NULL;
    int nold = 0;
    FILE *of = fopen(path, "r");
    if (of) {
        char line[PATH_MAX + 512], img[PATH_MAX];
        int r, pid;
        long long b;
        while (fgets(line, sizeof line, of))
            if (sscanf(line, "rank %d host %*255s pid %d image %4095s bytes %lld", &r, &pid, img, &b) == 4 &&
                !strchr(img, '/')) {
                old = realloc(old, (size_t)(nold + 1) * sizeof *old);
                if (old && (old[nold] = strdup(img))) nold++;
            }
        fclose(of);
    }
    if (bad || rename(tmp, path) != 0) {
        mx_msg("checkpoint %u: cannot write %s: %s", ck.seq, path, strerror(errno));
        unlink(tmp);
        for (int i = 0; i < nold; i++) free(old[i]);
        free(old);
        return -1;
    }
    for (int i = 0; i < nold; i++) {
        int keep = 0;
        for (int r = 0; r < job->n; r++)
            if (ck.text[r] && strcmp(ck.text[r], old[i]) == 0) keep = 1;
        if (!keep) {
            char ip[PATH_MAX + 300];
            snprintf(ip, sizeof ip, "%s/%s", ck.dir, old[i]);
            unlink(ip);
        }
        free(old[i]);
    }
    free(old);
    *mb = bytes / 1e6;
    return 0;
}

static int ck_go;                         /* the verdict sent with CKPT_GO */

static void ck_report_failure(struct mx_job *job)
{
    int fr = -1, nf = 0;
    const char *why = first_failure(job, &fr);
    for (int r = 0; r < job->n; r++)
        if (ck.state[r] == 2 || ck.state[r] == 3) nf++;
    mx_msg("checkpoint %u not written: %s%s", ck.seq, why ? why : "?",
           nf > 1 ? " (other ranks failed too)" : "");
}

static void ck_check(struct mx_job *job)
{
    for (int r = 0; r < job->n; r++)
        if (ck.state[r] == 0) return;
    if (ck.phase == CK_READY) {
        ck_go = 1;
        for (int r = 0; r < job->n; r++)
            if (ck.state[r] != 1) ck_go = 0;
        if (!ck_go) ck_report_failure(job);   /* the reasons of the refusals */
        ck.phase = CK_DONE;
        /* every rank that answered waits for the verdict, then answers DONE */
        int waiting = 0;
        for (int r = 0; r < job->n; r++)
            if ((ck.state[r] == 1 || ck.state[r] == 2) && reachable(job, r)) {
                send_u32s(job, r, KUMI_LAUNCH_MSG_CKPT_GO, ck.seq, (uint32_t)ck_go, NULL);
                if (ck_go) ck.state[r] = 0;
                else ck.state[r] = 5;        /* its DONE is not needed */
                waiting += ck_go;
            }
        if (!ck_go) {
            ck.phase = CK_IDLE;
            return;
        }
        if (waiting < job->n) return;
        for (int r = 0; r < job->n; r++)
            if (ck.state[r] == 0) return;
    }
    /* every rank answered DONE (or is gone) */
    int fr = -1;
    double mb = 0;
    ck.phase = CK_IDLE;
    int bad = 0;
    if (first_failure(job, &fr)) {
        ck_report_failure(job);
        bad = 1;
    } else if (write_manifest(job, &mb) != 0) {
        bad = 1;
    }
    if (bad)                               /* images of ranks that succeeded: not part of any checkpoint */
        for (int r = 0; r < job->n; r++)
            if (ck.state[r] == 1 && ck.text[r] && !strchr(ck.text[r], '/') && strncmp(ck.text[r], "image.", 6) == 0) {
                char ip[PATH_MAX + 300];
                snprintf(ip, sizeof ip, "%s/%s", ck.dir, ck.text[r]);
                unlink(ip);
            }
    if (bad && (ck.flags & KUMI_LAUNCH_CKPT_STOP)) {
        /* the ranks that wrote their image keep their transports released: the job cannot go on */
        mx_msg("checkpoint-and-stop: the checkpoint failed; ending the job");
        mx_stop_job(1, SIGKILL);
    }
    if (bad) return;
    mx_msg("checkpoint %u written to %s: %d image%s, %.1f MB, %.2f s", ck.seq, ck.dir, job->n,
           job->n == 1 ? "" : "s", mb, mx_now() - ck.t0);
    if (ck.flags & KUMI_LAUNCH_CKPT_STOP) {
        mx_msg("checkpoint-and-stop: ending the job");
        mx_stop_job(0, SIGKILL);
    }
}

void mx_ckpt_request(struct mx_job *job, const char *why)
{
    if (!mx_opt.ckpt) {
        mx_msg("%s: checkpoints are not enabled for this job (start it with mpiexec --ckpt); ignored", why);
        return;
    }
    if (mx_stopping()) return;
    if (ck.phase != CK_IDLE) {
        mx_msg("%s: checkpoint %u is still in progress; ignored", why, ck.seq);
        return;
    }
    if (!ck.state) {
        ck.state = mx_xcalloc((size_t)job->n, sizeof *ck.state);
        ck.text = mx_xcalloc((size_t)job->n, sizeof *ck.text);
        job->ckpt_frame_hook = mx_ckpt_frame;
        job->ckpt_gone_hook = mx_ckpt_rank_gone;
    }
    const char *d = mx_opt.ckpt_dir ? mx_opt.ckpt_dir : ".";
    char *abs = realpath(d, NULL);
    if (!abs) {
        mx_msg("%s: checkpoint folder %s: %s; ignored", why, d, strerror(errno));
        return;
    }
    snprintf(ck.dir, sizeof ck.dir, "%s", abs);
    free(abs);
    if (access(ck.dir, W_OK | X_OK) != 0) {
        mx_msg("%s: checkpoint folder %s: %s; ignored", why, ck.dir, strerror(errno));
        return;
    }
    ck.seq++;
    ck.flags = mx_opt.ckpt_stop ? KUMI_LAUNCH_CKPT_STOP : 0;
    ck.phase = CK_READY;
    ck.first = -1;
    ck.t0 = mx_now();
    if (job->verbose) mx_msg("%s: checkpoint %u to %s", why, ck.seq, ck.dir);
    for (int r = 0; r < job->n; r++) {
        struct mx_rank *rk = &job->ranks[r];
        char t[128];
        /* (behind a proxy: the proxy answers for a rank without connection) */
        if (rk->state != MX_RANK_RUNNING || (!job->rank_frame_hook && (!rk->conn || rk->finalized))) {
            snprintf(t, sizeof t, "rank %d %s", r,
                     rk->state == MX_RANK_EXITED ? "has exited" : !rk->connected ? "has not called MPI_Init"
                     : rk->finalized ? "has called MPI_Finalize" : "is not connected");
            ck_set(r, 3, t, strlen(t));
            continue;
        }
        ck_set(r, 0, "", 0);
        send_u32s(job, r, KUMI_LAUNCH_MSG_CKPT, ck.seq, ck.flags, ck.dir);
    }
    ck_check(job);
}

void mx_ckpt_frame(struct mx_job *job, int rank, int type, const unsigned char *p, size_t n)
{
    if (n < 12) return;
    uint32_t seq = kumi_launch_get_u32(p), ok = kumi_launch_get_u32(p + 4), tl = kumi_launch_get_u32(p + 8);
    if (!ck.state || tl != n - 12 || seq != ck.seq || ck.phase == CK_IDLE || ck.state[rank] != 0) return;
    if ((type == KUMI_LAUNCH_MSG_CKPT_READY) != (ck.phase == CK_READY)) return;
    ck_set(rank, ok ? 1 : 2, (const char *)p + 12, tl);
    ck_check(job);
}

void mx_ckpt_rank_gone(struct mx_job *job, int rank)
{
    if (ck.phase == CK_IDLE || !ck.state || ck.state[rank] != 0) return;
    char t[128];
    snprintf(t, sizeof t, "rank %d closed its control connection during the checkpoint", rank);
    ck_set(rank, 2, t, strlen(t));
    ck_check(job);
}

/* A rank's host was lost (remote.c): the checkpoint cannot be complete. */
void mx_ckpt_rank_lost(struct mx_job *job, int rank, const char *why)
{
    if (ck.phase == CK_IDLE || !ck.state || (ck.state[rank] != 0 && ck.state[rank] != 1)) return;
    if (ck.phase == CK_DONE && ck.state[rank] == 1) return;   /* its image is written */
    ck_set(rank, 2, why, strlen(why));
    ck_check(job);
}

/* ---- --restart DIR ---- */
static char **rs_images;                  /* per rank: DIR/image (absolute) */
static char **rs_hosts;                   /* per rank: its host in the manifest */
static int rs_place;                      /* 1: the ranks go to the manifest's hosts */

const char *mx_ckpt_image(int rank)
{
    return rs_images ? rs_images[rank] : NULL;
}

/* --restart without -host / --hostfile: rank r goes to the manifest's host
 * of rank r (hl: the hosts added by mx_ckpt_restart_plan).  Any placement:
 * ranks that shared a host at the checkpoint must share one again (other
 * hosts, or several of the manifest's hosts merged on one, are fine): what
 * they kept of each other is host-local (an RMA window's shared segment or
 * CMA access by process id, a single-copy (CMA) message that the receiver
 * pulls after the restart), so a placement that separates them is refused
 * here, clearly, instead of hanging or failing in the restarted job. */
void mx_ckpt_restart_place(const struct mx_hostlist *hl, int *host_of)
{
    if (!rs_images) return;
    if (rs_place)
        for (int r = 0; r < mx_opt.np; r++)
            for (int h = 0; h < hl->n; h++)
                if (!strcmp(hl->h[h].name, rs_hosts[r])) host_of[r] = h;
    int *first = mx_xcalloc((size_t)mx_opt.np, sizeof *first);   /* the lowest rank of r's old host */
    for (int r = 0; r < mx_opt.np; r++) {
        first[r] = r;
        for (int q = 0; q < r; q++)
            if (first[q] == q && !strcmp(rs_hosts[q], rs_hosts[r])) {
                first[r] = q;
                break;
            }
        int q = first[r];
        if (host_of[q] != host_of[r]) {
            mx_msg("--restart %s: ranks %d and %d shared host %s at the checkpoint, but would run on %s and %s: "
                   "ranks that shared a host must share one again (what they kept of each other is host-local: "
                   "RMA windows' shared memory, single-copy messages); place them together (-host / --hostfile "
                   "with the manifest's ranks per host, or more; `kumi_ckpt --info %s` lists them)",
                   mx_opt.restart, q, r, rs_hosts[r], hl->h[host_of[q]].name, hl->h[host_of[r]].name, mx_opt.restart);
            exit(1);
        }
    }
    free(first);
}

void mx_ckpt_restart_plan(void)
{
    char *dir = realpath(mx_opt.restart, NULL);
    if (!dir) {
        mx_msg("--restart %s: %s", mx_opt.restart, strerror(errno));
        exit(1);
    }
    char path[PATH_MAX + 32], line[PATH_MAX + 512];
    snprintf(path, sizeof path, "%s/manifest", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        mx_msg("--restart %s: %s: %s (not a checkpoint folder?)", mx_opt.restart, path, strerror(errno));
        exit(1);
    }
    int n = -1, first = 1, seen = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (first) {
            first = 0;
            if (strcmp(line, "kumi-checkpoint 1") != 0) {
                mx_msg("--restart %s: %s is not a Kumi checkpoint manifest", mx_opt.restart, path);
                exit(1);
            }
            continue;
        }
        int r, pid;
        char host[256], img[PATH_MAX];
        long long bytes;
        if (sscanf(line, "ranks %d", &n) == 1) {
            if (n < 1 || n > 1000000 || rs_images) {
                mx_msg("--restart %s: bad line '%s' in the manifest", mx_opt.restart, line);
                exit(1);
            }
            rs_images = mx_xcalloc((size_t)n, sizeof *rs_images);
            rs_hosts = mx_xcalloc((size_t)n, sizeof *rs_hosts);
        } else if (sscanf(line, "rank %d host %255s pid %d image %4095s bytes %lld", &r, host, &pid, img, &bytes) == 5) {
            if (!rs_images || r < 0 || r >= n || rs_images[r] || strchr(img, '/')) {
                mx_msg("--restart %s: bad line '%s' in the manifest", mx_opt.restart, line);
                exit(1);
            }
            rs_images[r] = mx_xcalloc(1, strlen(dir) + strlen(img) + 2);
            sprintf(rs_images[r], "%s/%s", dir, img);
            rs_hosts[r] = mx_xstrdup(host);
            if (access(rs_images[r], R_OK) != 0) {
                mx_msg("--restart %s: the image of rank %d, %s: %s", mx_opt.restart, r, rs_images[r], strerror(errno));
                exit(1);
            }
            seen++;
        }
    }
    fclose(f);
    if (n < 1 || seen != n) {
        mx_msg("--restart %s: incomplete manifest (%d of %d ranks)", mx_opt.restart, seen, n);
        exit(1);
    }
    if (mx_opt.np_given && mx_opt.np != n) {
        mx_msg("--restart %s: the checkpoint has %d ranks, not %d (-n)", mx_opt.restart, n, mx_opt.np);
        exit(1);
    }
    mx_opt.np = n;
    /* where the ranks go: the manifest's hosts, unless -host / --hostfile /
     * --launcher fork / slurm says otherwise, or they are all this one (one host, no proxies) */
    int all_local = 1;
    for (int r = 0; r < n; r++)
        if (!mx_host_is_local(rs_hosts[r])) all_local = 0;
    int lf = mx_opt.launcher && (!strcmp(mx_opt.launcher, "fork") || !strcmp(mx_opt.launcher, "slurm"));
    if (!mx_opt.hosts.n && !lf && !all_local) {
        for (int r = 0; r < n; r++) {
            if (!mx_host_name_ok(rs_hosts[r], strlen(rs_hosts[r]))) {
                mx_msg("--restart %s: host '%s' of rank %d in the manifest is not a host name", mx_opt.restart,
                       rs_hosts[r], r);
                exit(1);
            }
            if (mx_hosts_add(&mx_opt.hosts, rs_hosts[r], strlen(rs_hosts[r]), 1) < 0) exit(1);
        }
        rs_place = 1;
    }
    /* the restart program: parameter kumi_ckpt_restart_program (a build tree's), else the installation's */
    const char *prog = getenv("KUMI_CKPT_RESTART_PROGRAM");
    static char def[PATH_MAX];
    if (!prog || !*prog) {
        snprintf(def, sizeof def, "%s/kumi_restart", KUMI_BINDIR);
        prog = def;
    }
    if (access(prog, X_OK) != 0) {
        mx_msg("--restart: the restart program %s: %s (ckpt/image is built on x86_64 Linux only; "
               "KUMI_CKPT_RESTART_PROGRAM names another)", prog, strerror(errno));
        exit(1);
    }
    static char *av[3];
    av[0] = (char *)prog;
    av[1] = rs_images[0];
    av[2] = NULL;
    mx_opt.argv = av;
    free(dir);
}

/* --checkpoint-interval S: a request every S seconds once every rank is in
 * the job (connected: past its HELLO); the first S seconds after the first
 * call, then S seconds after each request. */
double mx_ckpt_timer(struct mx_job *job, double now)
{
    static double next_at;
    if (next_at == 0) next_at = now + mx_opt.ckpt_interval;
    if (now < next_at) return next_at;
    int all = 1;
    for (int r = 0; r < job->n; r++)                   /* behind proxies: past its first fence */
        if (job->rank_frame_hook ? job->ranks[r].fences < 1 : !job->ranks[r].conn) all = 0;
    if (!all || ck.phase != CK_IDLE) {
        next_at = now + 0.2;               /* ranks still starting, or one in progress: soon */
        return next_at;
    }
    mx_ckpt_request(job, "--checkpoint-interval");
    next_at = now + mx_opt.ckpt_interval;
    return next_at;
}
