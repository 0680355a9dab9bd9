/* impi_testclient: a made-up IMPI client for tests/scripts/impi_server.sh
 * (not installed).  It runs the client side of the start-up exchange with
 * the library's functions (kumi/impi.h) and prints the job every client
 * learns, one fact a line, so that the clients' outputs can be compared.
 *
 *   impi_testclient -server HOST:PORT -rank K [-nhosts H] [-ppn P]
 *                   [-auth none | -auth KEY | -auth any:KEY | -oldauth KEY]
 *                   [-xsize X] [-die-at STEP] [-stall-at STEP] [-timeout S]
 *
 * Client K contributes: H hosts (default 1), host j with id 10.K.j.1, port
 * 20000 + 100 K + j, P procs (default 2), ackmark 10 + K, hiwater 20 + K;
 * proc i of the client: the id of its host, pid 1000 K + i; datalen 4000 + K,
 * tagub 40000 + K, xsize X (default -1), maxlinear -1.
 * STEP: AUTH, IMPI, a label name (C_NPROCS ...), DONE, FINI: -die-at exits
 * (status 3) before that step without a word to the server, -stall-at
 * sleeps there (until killed).  Exit 0 when the exchange and FINI went
 * through, 1 with a message on stderr when something failed. */
#include <kumi/impi.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *die_at = "", *stall_at = "";
static int rank = -1;

static void at(const char *step)
{
    if (!strcmp(step, die_at)) {
        fprintf(stderr, "impi_testclient %d: dies before %s (as asked)\n", rank, step);
        exit(3);
    }
    if (!strcmp(step, stall_at)) {
        fprintf(stderr, "impi_testclient %d: stalls before %s (as asked)\n", rank, step);
        for (;;)
            pause();
    }
}

static void fail(const struct kumi_impi_client *c)
{
    fprintf(stderr, "impi_testclient %d: %s\n", rank, c->err);
    exit(1);
}

static const char *idtext(const uint8_t id[16])
{
    static char buf[4][64];
    static int k;
    uint8_t a[16];
    k = (k + 1) % 4;
    int fam = kumi_impi_hostid_get(id, a);
    inet_ntop(fam, a, buf[k], sizeof buf[k]);
    return buf[k];
}

int main(int argc, char **argv)
{
    const char *server = NULL, *auth = "none", *oldkey = NULL;
    int nhosts = 1, ppn = 2, xsize = -1, timeout_s = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-server")) server = v;
        else if (!strcmp(a, "-rank")) rank = atoi(v);
        else if (!strcmp(a, "-nhosts")) nhosts = atoi(v);
        else if (!strcmp(a, "-ppn")) ppn = atoi(v);
        else if (!strcmp(a, "-auth")) auth = v;
        else if (!strcmp(a, "-oldauth")) oldkey = v;
        else if (!strcmp(a, "-xsize")) xsize = atoi(v);
        else if (!strcmp(a, "-die-at")) die_at = v;
        else if (!strcmp(a, "-stall-at")) stall_at = v;
        else if (!strcmp(a, "-timeout")) timeout_s = atoi(v);
        else {
            fprintf(stderr, "impi_testclient: unknown option %s\n", a);
            return 2;
        }
    }
    if (!server || rank < 0 || nhosts < 1 || ppn < 1) {
        fprintf(stderr, "usage: impi_testclient -server HOST:PORT -rank K [options]\n");
        return 2;
    }
    struct kumi_impi_host *hosts = calloc((size_t)nhosts, sizeof *hosts);
    struct kumi_impi_proc *procs = calloc((size_t)nhosts * (size_t)ppn, sizeof *procs);
    for (int j = 0; j < nhosts; j++) {
        uint8_t a[4] = { 10, (uint8_t)rank, (uint8_t)j, 1 };
        kumi_impi_hostid_set(hosts[j].id, AF_INET, a);
        hosts[j].port = 20000 + 100 * rank + j;
        hosts[j].nprocs = ppn;
        hosts[j].ackmark = 10 + (uint32_t)rank;
        hosts[j].hiwater = 20 + (uint32_t)rank;
        for (int p = 0; p < ppn; p++) {
            memcpy(procs[j * ppn + p].id, hosts[j].id, 16);
            procs[j * ppn + p].pid = 1000 * rank + j * ppn + p;
        }
    }
    struct kumi_impi_mine mine = { .datalen = 4000 + rank, .tagub = 40000 + rank, .xsize = xsize, .maxlinear = -1,
                                   .nhosts = nhosts, .nprocs = nhosts * ppn, .hosts = hosts, .procs = procs };
    struct kumi_impi_client c;
    struct kumi_impi_job job;

    if (kumi_impi_client_connect(&c, server, timeout_s * 1000) != 0)
        fail(&c);
    at("AUTH");
    if (oldkey) {                      /* the draft's old AUTH: 8-byte key, no reply */
        uint8_t o[16];
        uint64_t k;
        if (kumi_impi_parse_key(oldkey, &k) != 0)
            return 2;
        kumi_impi_enc_cmd(o, KUMI_IMPI_CMD_AUTH, 8);
        kumi_impi_put64(o + 8, k);
        if (send(c.fd, o, sizeof o, MSG_NOSIGNAL) != (ssize_t)sizeof o)
            return 1;
    } else {
        uint32_t mask = 0;
        uint64_t key = 0;
        const char *k = NULL;
        if (!strcmp(auth, "none"))
            mask = 1u << KUMI_IMPI_AUTH_NONE;
        else if (!strncmp(auth, "any:", 4))
            mask = 1u << KUMI_IMPI_AUTH_NONE | 1u << KUMI_IMPI_AUTH_KEY, k = auth + 4;
        else
            mask = 1u << KUMI_IMPI_AUTH_KEY, k = auth;
        if (k && kumi_impi_parse_key(k, &key) != 0) {
            fprintf(stderr, "impi_testclient: bad key %s\n", k);
            return 2;
        }
        int chosen;
        if (kumi_impi_client_auth(&c, mask, key, &chosen) != 0)
            fail(&c);
    }
    at("IMPI");
    if (kumi_impi_client_impi(&c, rank) != 0)
        fail(&c);
    /* the labels one by one, so that -die-at / -stall-at can stop between them */
    char err[300];
    memset(&job, 0, sizeof job);
    job.nclients = c.size;
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++) {
        uint32_t label = kumi_impi_label_order[i], mask;
        at(kumi_impi_label_name(label));
        size_t n = kumi_impi_label_encode(label, &mine, NULL), nr;
        uint8_t *d = malloc(n), *all;
        kumi_impi_label_encode(label, &mine, d);
        if (kumi_impi_client_coll(&c, label, d, n, &mask, &all, &nr) != 0)
            fail(&c);
        if (kumi_impi_job_add(&job, label, mask, all, nr, err, sizeof err) != 0) {
            fprintf(stderr, "impi_testclient %d: %s\n", rank, err);
            return 1;
        }
        free(d);
        free(all);
    }
    if (kumi_impi_job_finish(&job, err, sizeof err) != 0) {
        fprintf(stderr, "impi_testclient %d: %s\n", rank, err);
        return 1;
    }
    at("DONE");
    if (kumi_impi_client_done(&c) != 0)
        fail(&c);

    printf("nclients %d\nnhosts %d nprocs %d\n", job.nclients, job.nhosts, job.nprocs);
    printf("pk_maxlen %d tag_ub %d xsize %d maxlinear %d ackmark %u hiwater %u\n", job.pk_maxlen, job.tag_ub,
           job.xsize, job.maxlinear, job.ackmark, job.hiwater);
    for (int k = 0; k < job.nclients; k++)
        printf("client %d: nhosts %d nprocs %d datalen %d tagub %d first_host %d first_proc %d\n", k,
               job.c_nhosts[k], job.c_nprocs[k], job.c_datalen[k], job.c_tagub[k], job.first_host[k],
               job.first_proc_of_client[k]);
    for (int h = 0; h < job.nhosts; h++)
        printf("host %d: id %s port %d nprocs %d ackmark %u hiwater %u first_proc %d\n", h, idtext(job.hosts[h].id),
               job.hosts[h].port, job.hosts[h].nprocs, job.hosts[h].ackmark, job.hosts[h].hiwater,
               job.host_first_proc[h]);
    for (int p = 0; p < job.nprocs; p++)
        printf("proc %d: id %s pid %lld\n", p, idtext(job.procs[p].id), (long long)job.procs[p].pid);
    fflush(stdout);
    kumi_impi_job_free(&job);
    at("FINI");
    if (kumi_impi_client_fini(&c) != 0)
        fail(&c);
    free(hosts);
    free(procs);
    return 0;
}
