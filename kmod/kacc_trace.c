// SPDX-License-Identifier: GPL-2.0
/* A timeline of the module's work (module parameter trace=1): a ring of
 * timestamped events (a schedule's START, each node done, its finish, the
 * socket callbacks, the work items queued, begun and ended, the bytes a
 * work item moved, the rank's blocking wait, each ioctl: its number and
 * nanoseconds, at its end), read (and consumed) through
 * /proc/kumi_kacc_trace, one event a line:
 *     NS CPU CTX EVENT A B
 * NS: ktime_get_ns(); CTX: the context's number (its open).  Off (trace=0,
 * the default), an event costs one test of a global.  For the benchmark's
 * analysis (tests/bench/kacc-timeline.py), not for production. */
#include <linux/module.h>
#include <linux/vmalloc.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/ktime.h>
#include <linux/smp.h>
#include <linux/atomic.h>
#include "kacc_int.h"

int kacc_trace_on;
module_param_named(trace, kacc_trace_on, int, 0644);
MODULE_PARM_DESC(trace, "1: record a timeline of events, read from /proc/kumi_kacc_trace (0, the default: off)");

#define KT_N (1u << 16)
struct kt_ev {
    u64 t;
    u32 ctx, a, b;
    u16 ev, cpu;
};
static struct kt_ev *kt_ring;
static atomic_t kt_wr = ATOMIC_INIT(0);
static unsigned int kt_rd;
static DEFINE_MUTEX(kt_mx);

static const char *const kt_names[] = {
    [KT_START] = "start", [KT_NODE] = "node", [KT_FINISH] = "finish", [KT_CB_READY] = "cb_ready",
    [KT_CB_SPACE] = "cb_space", [KT_KICK] = "kick", [KT_WBEGIN] = "wbegin", [KT_WEND] = "wend",
    [KT_SENT] = "sent", [KT_RECVD] = "recvd", [KT_POLL] = "poll", [KT_CALC] = "calc", [KT_CALC_END] = "calc_end",
    [KT_IOCTL] = "ioctl",
};

void kacc_trace_ev(u32 ctx, unsigned int ev, u32 a, u32 b)
{
    struct kt_ev *e;
    if (!kt_ring) return;
    e = &kt_ring[((unsigned int)atomic_inc_return(&kt_wr) - 1) % KT_N];
    e->t = ktime_get_ns();
    e->ctx = ctx;
    e->ev = (u16)ev;
    e->cpu = (u16)raw_smp_processor_id();
    e->a = a;
    e->b = b;
}

static int kt_show(struct seq_file *m, void *v)
{
    unsigned int wr, i;
    mutex_lock(&kt_mx);
    wr = (unsigned int)atomic_read(&kt_wr);
    if (wr - kt_rd > KT_N) kt_rd = wr - KT_N;  /* overwritten: the last KT_N */
    for (i = kt_rd; i != wr; i++) {
        const struct kt_ev *e = &kt_ring[i % KT_N];
        seq_printf(m, "%llu %u %u %s %u %u\n", e->t, e->cpu, e->ctx,
                   e->ev < ARRAY_SIZE(kt_names) && kt_names[e->ev] ? kt_names[e->ev] : "?", e->a, e->b);
    }
    kt_rd = wr;
    mutex_unlock(&kt_mx);
    return 0;
}

static int kt_open(struct inode *ino, struct file *f)
{
    /* the whole ring in one buffer: a line is under 64 bytes */
    return single_open_size(f, kt_show, NULL, KT_N * 64);
}

static const struct proc_ops kt_ops = {
    .proc_open = kt_open,
    .proc_read = seq_read,
    .proc_lseek = seq_lseek,
    .proc_release = single_release,
};

int kacc_trace_init(void)
{
    kt_ring = vzalloc(KT_N * sizeof *kt_ring);
    if (!kt_ring) return -ENOMEM;
    proc_create("kumi_kacc_trace", 0400, NULL, &kt_ops);
    return 0;
}

void kacc_trace_exit(void)
{
    remove_proc_entry("kumi_kacc_trace", NULL);
    vfree(kt_ring);
    kt_ring = NULL;
}
