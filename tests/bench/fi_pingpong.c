/* fi_pingpong: the floor of a libfabric provider on this machine, without MPI.
 * Two processes (fork), one per core, exchange messages with fi_inject /
 * fi_send and pre-posted fi_recv on an RDM endpoint, spinning on the CQ; the
 * one-way time is what any MPI over that provider pays at least.
 *   cc -O2 -o fi_pingpong tests/bench/fi_pingpong.c -lfabric
 *   FI_PINGPONG_PROVIDER="tcp;ofi_rxm" ./fi_pingpong 64      (bytes; default 64)
 * Used for the note on p2p/ofi's small-message latency (see run-bench.sh). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "fi_pingpong: %s: %s\n", what, fi_strerror(rc < 0 ? -rc : rc));
    exit(1);
}

int main(int argc, char **argv)
{
    size_t size = argc > 1 ? (size_t)atol(argv[1]) : 64;
    const char *prov = getenv("FI_PINGPONG_PROVIDER") ? getenv("FI_PINGPONG_PROVIDER") : "tcp;ofi_rxm";
    int iters = 20000, warm = 1000, up[2], down[2];
    if (pipe(up) || pipe(down)) return 1;
    pid_t pid = fork();
    int me = pid == 0;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(me, &cs);
    sched_setaffinity(0, sizeof cs, &cs);

    struct fi_info *h = fi_allocinfo(), *info = NULL;
    h->caps = FI_MSG;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    h->fabric_attr->prov_name = strdup(prov);
    int rc = fi_getinfo(FI_VERSION(1, 10), NULL, NULL, 0, h, &info);
    if (rc) die("fi_getinfo", rc);
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT, .size = 256 };
    struct fi_av_attr aa = { .type = FI_AV_TABLE };
    if ((rc = fi_fabric(info->fabric_attr, &fab, NULL))) die("fi_fabric", rc);
    if ((rc = fi_domain(fab, info, &dom, NULL))) die("fi_domain", rc);
    if ((rc = fi_cq_open(dom, &ca, &cq, NULL))) die("fi_cq_open", rc);
    if ((rc = fi_av_open(dom, &aa, &av, NULL))) die("fi_av_open", rc);
    if ((rc = fi_endpoint(dom, info, &ep, NULL))) die("fi_endpoint", rc);
    fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
    fi_ep_bind(ep, &av->fid, 0);
    if ((rc = fi_enable(ep))) die("fi_enable", rc);
    char name[256], peer[256];
    size_t nl = sizeof name;
    if ((rc = fi_getname(&ep->fid, name, &nl))) die("fi_getname", rc);
    if (write(me ? up[1] : down[1], name, nl) != (ssize_t)nl || read(me ? down[0] : up[0], peer, nl) != (ssize_t)nl)
        return 1;
    fi_addr_t pa;
    if (fi_av_insert(av, peer, 1, &pa, 0, NULL) != 1) die("fi_av_insert", -FI_EINVAL);
    char *sb = calloc(1, size + 64), *rb = calloc(1, size + 64);
    struct fi_context2 rctx, sctx;
    struct fi_cq_entry e;
    double t0 = 0;
    for (int i = -warm; i < iters; i++) {
        if (i == 0) t0 = now();
        while ((rc = (int)fi_recv(ep, rb, size + 64, NULL, FI_ADDR_UNSPEC, &rctx)) == -FI_EAGAIN) fi_cq_read(cq, &e, 0);
        for (int turn = 0; turn < 2; turn++) {
            if ((turn == 0) == (me == 0)) {      /* send */
                if (size <= info->tx_attr->inject_size) {
                    while ((rc = (int)fi_inject(ep, sb, size, pa)) == -FI_EAGAIN) fi_cq_read(cq, &e, 0);
                } else {
                    while ((rc = (int)fi_send(ep, sb, size, NULL, pa, &sctx)) == -FI_EAGAIN) fi_cq_read(cq, &e, 0);
                    while (fi_cq_read(cq, &e, 1) != 1 || e.op_context != &sctx) { }
                }
                if (rc) die("send", rc);
            } else {                             /* receive */
                while (fi_cq_read(cq, &e, 1) != 1 || e.op_context != &rctx) { }
            }
        }
    }
    if (!me) {
        printf("%s: %zu bytes: %.2f us one-way\n", prov, size, (now() - t0) / iters / 2 * 1e6);
        wait(NULL);
    }
    return 0;
}
