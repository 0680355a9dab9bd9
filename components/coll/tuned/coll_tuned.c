/* coll/tuned: several algorithms per collective, chosen per call by a
 * decision table keyed on the process count and the message size.
 *
 * The table is text, one rule per line, tried in order; the first rule whose
 * conditions hold and whose algorithm can run the call decides:
 *
 *     # operation   conditions              algorithm
 *     allreduce     bytes<=2k               recursive_doubling
 *     allreduce     p>=3,bytes<=512k        rabenseifner
 *     allreduce     *                       ring
 *
 * Conditions: `*` (always) or a comma-separated list of `p` (processes in
 * the communicator) or `bytes` compared with <, <=, =, >=, > to a number
 * (suffixes k, m, g: powers of 1024).  `bytes` is, per operation: bcast,
 * reduce, allreduce, scan, exscan: count x type size; gather, scatter,
 * allgather, alltoall: one process's block; allgatherv: the average block;
 * reduce_scatter(_block): the whole vector; barrier, alltoallv, alltoallw:
 * 0 (their sizes differ between processes, and every process must decide
 * alike).  An algorithm that cannot run a call (a commutative-only one with
 * a non-commutative op, recursive doubling on a process count that is not a
 * power of two, ...) is skipped and the next matching rule is tried; every
 * operation's last resort is its first algorithm, which runs anything.
 *
 * Rules of a file (parameter coll_tuned_table) come before the built-in
 * table below, so a file need only hold the cases it changes.  Parameter
 * coll_tuned_<operation>_algorithm forces an algorithm for every call it
 * can run.  kumi_info --param coll tuned lists the algorithms.
 *
 * Every algorithm is written once (coll_tuned.h) and runs as the blocking
 * collective and as the schedule of the non-blocking and persistent one.
 */
#include "coll_tuned.h"
#include <kumi/component.h>
#include <kumi/param.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The built-in decision table.  Its choices follow the usual cost models
 * (latency-bound: fewest rounds; bandwidth-bound: least data per process)
 * and were checked with the collective benchmark (tests/bench, coll2 and
 * coll4: 2 and 4 processes on shared memory, the latter on 2 cores):
 * binomial bcast wins up to 4 processes at every size there, Rabenseifner
 * beats ring and recursive doubling for allreduce above a few KiB, a
 * dissemination barrier is one exchange at 2 processes.  Lines whose
 * algorithm needs a commutative op or a power-of-two process count are
 * followed by one that runs anything. */
static const char tuned_builtin_table[] =
    "barrier               *                    dissemination\n"
    "bcast                 p<=4                 binomial\n"
    "bcast                 bytes<=8k            binomial\n"
    "bcast                 bytes<=512k          scatter_allgather\n"
    "bcast                 *                    pipeline\n"
    "gather                bytes<=4k            binomial\n"
    "gather                *                    linear\n"
    "scatter               bytes<=4k            binomial\n"
    "scatter               *                    linear\n"
    "allgather             bytes<=1k            recursive_doubling\n"
    "allgather             bytes<=1k            bruck\n"
    "allgather             *                    ring\n"
    "allgatherv            bytes<=1k            recursive_doubling\n"
    "allgatherv            *                    ring\n"
    "alltoall              p<=4                 linear\n"
    "alltoall              bytes<=256           bruck\n"
    "alltoall              bytes<=8k            linear\n"
    "alltoall              *                    pairwise\n"
    "alltoallv             p<=16                linear\n"
    "alltoallv             *                    pairwise\n"
    "alltoallw             p<=16                linear\n"
    "alltoallw             *                    pairwise\n"
    "reduce                bytes<=16k           binomial\n"
    "reduce                p>=4,bytes<=1m       rabenseifner\n"
    "reduce                *                    pipeline\n"
    "allreduce             bytes<=4k            recursive_doubling\n"
    "allreduce             *                    rabenseifner\n"
    "allreduce             *                    recursive_doubling\n"
    "reduce_scatter        *                    recursive_halving\n"
    "reduce_scatter_block  *                    recursive_halving\n"
    "scan                  p<=4                 linear\n"
    "scan                  *                    recursive_doubling\n"
    "exscan                p<=4                 linear\n"
    "exscan                *                    recursive_doubling\n";

/* ------------------------------------------------------------ algorithms */
enum { NEED_COMMUTE = 1, NEED_POF2 = 2, NEED_EVEN = 4 };

typedef void (*tuned_anyfn)(void);
struct tuned_alg {
    const char *name;
    unsigned need;
    tuned_anyfn fn;
};
#define ALG(name, need, fn) { name, need, (tuned_anyfn)(fn) }

enum tuned_opid {
    OP_BARRIER, OP_BCAST, OP_GATHER, OP_SCATTER, OP_ALLGATHER, OP_ALLGATHERV, OP_ALLTOALL,
    OP_ALLTOALLV, OP_ALLTOALLW, OP_REDUCE, OP_ALLREDUCE, OP_REDUCE_SCATTER,
    OP_REDUCE_SCATTER_BLOCK, OP_SCAN, OP_EXSCAN, OP_COUNT
};

#define MAXALG 6
static const struct tuned_op {
    const char *name;
    const char *mpiname;
    struct tuned_alg algs[MAXALG];
} tuned_ops[OP_COUNT] = {
    [OP_BARRIER] = { "barrier", "MPI_Barrier", {
        ALG("binomial", 0, tuned_barrier_binomial),
        ALG("linear", 0, tuned_barrier_linear),
        ALG("dissemination", 0, tuned_barrier_dissemination),
        ALG("recursive_doubling", 0, tuned_barrier_recursive_doubling) } },
    [OP_BCAST] = { "bcast", "MPI_Bcast", {
        ALG("binomial", 0, tuned_bcast_binomial),
        ALG("linear", 0, tuned_bcast_linear),
        ALG("pipeline", 0, tuned_bcast_pipeline),
        ALG("scatter_allgather", 0, tuned_bcast_scatter_allgather) } },
    [OP_GATHER] = { "gather", "MPI_Gather", {
        ALG("linear", 0, tuned_gather_linear),
        ALG("binomial", 0, tuned_gather_binomial) } },
    [OP_SCATTER] = { "scatter", "MPI_Scatter", {
        ALG("linear", 0, tuned_scatter_linear),
        ALG("binomial", 0, tuned_scatter_binomial) } },
    [OP_ALLGATHER] = { "allgather", "MPI_Allgather", {
        ALG("ring", 0, tuned_allgather_ring),
        ALG("linear", 0, tuned_allgather_linear),
        ALG("recursive_doubling", NEED_POF2, tuned_allgather_recursive_doubling),
        ALG("bruck", 0, tuned_allgather_bruck),
        ALG("neighbor_exchange", NEED_EVEN, tuned_allgather_neighbor_exchange) } },
    [OP_ALLGATHERV] = { "allgatherv", "MPI_Allgatherv", {
        ALG("ring", 0, tuned_allgatherv_ring),
        ALG("linear", 0, tuned_allgatherv_linear),
        ALG("recursive_doubling", NEED_POF2, tuned_allgatherv_recursive_doubling) } },
    [OP_ALLTOALL] = { "alltoall", "MPI_Alltoall", {
        ALG("pairwise", 0, tuned_alltoall_pairwise),
        ALG("linear", 0, tuned_alltoall_linear),
        ALG("bruck", 0, tuned_alltoall_bruck) } },
    [OP_ALLTOALLV] = { "alltoallv", "MPI_Alltoallv", {
        ALG("pairwise", 0, tuned_alltoallv_pairwise),
        ALG("linear", 0, tuned_alltoallv_linear) } },
    [OP_ALLTOALLW] = { "alltoallw", "MPI_Alltoallw", {
        ALG("pairwise", 0, tuned_alltoallw_pairwise),
        ALG("linear", 0, tuned_alltoallw_linear) } },
    [OP_REDUCE] = { "reduce", "MPI_Reduce", {
        ALG("binomial", 0, tuned_reduce_binomial),
        ALG("linear", 0, tuned_reduce_linear),
        ALG("pipeline", 0, tuned_reduce_pipeline),
        ALG("rabenseifner", NEED_COMMUTE, tuned_reduce_rabenseifner) } },
    [OP_ALLREDUCE] = { "allreduce", "MPI_Allreduce", {
        ALG("recursive_doubling", 0, tuned_allreduce_recursive_doubling),
        ALG("reduce_bcast", 0, tuned_allreduce_reduce_bcast),
        ALG("rabenseifner", NEED_COMMUTE, tuned_allreduce_rabenseifner),
        ALG("ring", NEED_COMMUTE, tuned_allreduce_ring) } },
    [OP_REDUCE_SCATTER] = { "reduce_scatter", "MPI_Reduce_scatter", {
        ALG("reduce_scatterv", 0, tuned_reduce_scatter_reduce_scatterv),
        ALG("recursive_halving", NEED_COMMUTE, tuned_reduce_scatter_recursive_halving),
        ALG("ring", NEED_COMMUTE, tuned_reduce_scatter_ring) } },
    [OP_REDUCE_SCATTER_BLOCK] = { "reduce_scatter_block", "MPI_Reduce_scatter_block", {
        ALG("reduce_scatterv", 0, tuned_reduce_scatter_reduce_scatterv),
        ALG("recursive_halving", NEED_COMMUTE, tuned_reduce_scatter_recursive_halving),
        ALG("ring", NEED_COMMUTE, tuned_reduce_scatter_ring) } },
    [OP_SCAN] = { "scan", "MPI_Scan", {
        ALG("linear", 0, tuned_scan_linear),
        ALG("recursive_doubling", 0, tuned_scan_recursive_doubling) } },
    [OP_EXSCAN] = { "exscan", "MPI_Exscan", {
        ALG("linear", 0, tuned_exscan_linear),
        ALG("recursive_doubling", 0, tuned_exscan_recursive_doubling) } },
};

static int tuned_nalgs(int op)
{
    int n = 0;
    while (n < MAXALG && tuned_ops[op].algs[n].name) n++;
    return n;
}

static int tuned_alg_index(int op, const char *name)
{
    for (int a = 0; a < tuned_nalgs(op); a++)
        if (!strcmp(tuned_ops[op].algs[a].name, name)) return a;
    return -1;
}

/* ------------------------------------------------------------ the table */
enum { CMP_LT, CMP_LE, CMP_EQ, CMP_GE, CMP_GT };
struct tuned_cond {
    unsigned char var;      /* 0: p, 1: bytes */
    unsigned char cmp;
    unsigned long long val;
};
#define MAXCOND 4
struct tuned_rule {
    int op, alg, ncond;
    struct tuned_cond cond[MAXCOND];
};

static struct tuned_rule *tuned_rules;
static int tuned_nrules, tuned_caprules;

/* Parameters. */
static const char *tuned_forced_name[OP_COUNT];
static int tuned_forced[OP_COUNT];
static const char *tuned_table_file;
static size_t tuned_segsize;
static long long tuned_verbose;

static int tuned_parse_num(const char *s, unsigned long long *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (end == s || errno) return -1;
    unsigned long long mul = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mul = 1ULL << 10; end++; break;
    case 'm': mul = 1ULL << 20; end++; break;
    case 'g': mul = 1ULL << 30; end++; break;
    default: break;
    }
    if (*end) return -1;
    *v = x * mul;
    return 0;
}

/* One condition such as "bytes<=64k"; 0 or -1. */
static int tuned_parse_cond(const char *s, struct tuned_cond *c)
{
    const char *rest;
    if (!strncmp(s, "bytes", 5)) { c->var = 1; rest = s + 5; }
    else if (*s == 'p') { c->var = 0; rest = s + 1; }
    else return -1;
    if (!strncmp(rest, "<=", 2)) { c->cmp = CMP_LE; rest += 2; }
    else if (!strncmp(rest, ">=", 2)) { c->cmp = CMP_GE; rest += 2; }
    else if (*rest == '<') { c->cmp = CMP_LT; rest++; }
    else if (*rest == '>') { c->cmp = CMP_GT; rest++; }
    else if (*rest == '=') { c->cmp = CMP_EQ; rest++; }
    else return -1;
    return tuned_parse_num(rest, &c->val);
}

/* Parse the table in text (from src, for messages) and append its rules.
 * Returns 0, or -1 after writing the first problem into err. */
static int tuned_parse_table(const char *text, const char *src, char *err, size_t errlen)
{
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        lineno++;
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line too long", src, lineno);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (eol ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *save = NULL, *opname = strtok_r(line, " \t\r", &save);
        if (!opname) continue;
        char *conds = strtok_r(NULL, " \t\r", &save);
        char *algname = strtok_r(NULL, " \t\r", &save);
        char *extra = strtok_r(NULL, " \t\r", &save);
        if (!conds || !algname || extra) {
            snprintf(err, errlen, "%s:%d: expected `operation conditions algorithm`", src, lineno);
            return -1;
        }
        struct tuned_rule r;
        memset(&r, 0, sizeof r);
        r.op = -1;
        for (int o = 0; o < OP_COUNT; o++)
            if (!strcmp(tuned_ops[o].name, opname)) r.op = o;
        if (r.op < 0) {
            snprintf(err, errlen, "%s:%d: unknown operation '%s'", src, lineno, opname);
            return -1;
        }
        r.alg = tuned_alg_index(r.op, algname);
        if (r.alg < 0) {
            snprintf(err, errlen, "%s:%d: %s has no algorithm '%s'", src, lineno, opname, algname);
            return -1;
        }
        if (strcmp(conds, "*")) {
            char *csave = NULL;
            for (char *c = strtok_r(conds, ",", &csave); c; c = strtok_r(NULL, ",", &csave)) {
                if (r.ncond == MAXCOND || tuned_parse_cond(c, &r.cond[r.ncond]) < 0) {
                    snprintf(err, errlen, "%s:%d: bad condition '%s' (e.g. p>=8, bytes<=64k; "
                             "at most %d)", src, lineno, c, MAXCOND);
                    return -1;
                }
                r.ncond++;
            }
        }
        if (tuned_nrules == tuned_caprules) {
            int ncap = tuned_caprules ? tuned_caprules * 2 : 64;
            struct tuned_rule *n = realloc(tuned_rules, sizeof *n * (size_t)ncap);
            if (!n) {
                snprintf(err, errlen, "%s: out of memory", src);
                return -1;
            }
            tuned_rules = n;
            tuned_caprules = ncap;
        }
        tuned_rules[tuned_nrules++] = r;
    }
    return 0;
}

static int tuned_load_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "coll_tuned_table: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *n = realloc(text, cap * 2);
            if (!n) { free(text); text = NULL; break; }
            text = n;
            cap *= 2;
        }
    }
    fclose(f);
    if (!text) {
        snprintf(err, errlen, "coll_tuned_table: %s: out of memory", path);
        return -1;
    }
    text[len] = '\0';
    int rc = tuned_parse_table(text, path, err, errlen);
    free(text);
    return rc;
}

static int tuned_cond_holds(const struct tuned_cond *c, unsigned long long p,
                            unsigned long long bytes)
{
    unsigned long long x = c->var ? bytes : p;
    switch (c->cmp) {
    case CMP_LT: return x < c->val;
    case CMP_LE: return x <= c->val;
    case CMP_EQ: return x == c->val;
    case CMP_GE: return x >= c->val;
    default: return x > c->val;
    }
}

/* ------------------------------------------------------------ choosing */
struct tuned_call {
    int op, p;
    size_t bytes;
    int commute;            /* the op is commutative (reductions), else 1 */
};

static int tuned_usable(const struct tuned_call *c, int alg)
{
    unsigned need = tuned_ops[c->op].algs[alg].need;
    if ((need & NEED_COMMUTE) && !c->commute) return 0;
    if ((need & NEED_POF2) && (c->p & (c->p - 1))) return 0;
    if ((need & NEED_EVEN) && (c->p & 1)) return 0;
    return 1;
}

static int tuned_choose(const struct tuned_call *c, const char **why)
{
    int f = tuned_forced[c->op];
    if (f >= 0 && tuned_usable(c, f)) { *why = "forced"; return f; }
    for (int i = 0; i < tuned_nrules; i++) {
        const struct tuned_rule *r = &tuned_rules[i];
        if (r->op != c->op) continue;
        int ok = 1;
        for (int k = 0; k < r->ncond && ok; k++)
            ok = tuned_cond_holds(&r->cond[k], (unsigned long long)c->p, c->bytes);
        if (ok && tuned_usable(c, r->alg)) {
            *why = f >= 0 ? "forced algorithm cannot run this call; table" : "table";
            return r->alg;
        }
    }
    *why = "fallback";
    return 0;
}

/* Start a call: choose the algorithm, prepare the program.  Returns the
 * algorithm's function. */
static tuned_anyfn tuned_start(struct tuned_cx *cx, MPI_Comm comm, struct kumi_sched *s, int op,
                               size_t bytes, MPI_Op mop)
{
    struct tuned_call c = { .op = op, .p = kumi_comm_size(comm), 
                            .bytes = bytes, .commute = mop == MPI_OP_NULL ? 1 : kumi_op_commutative(mop) };
    const char *why;
    int alg = tuned_choose(&c, &why);
    tuned_begin(cx, comm, s, 100 + op);
    cx->segsize = tuned_segsize;            /* 0: one segment */
    if (tuned_verbose > 0)
        fprintf(stderr, "coll/tuned[%d]: %s%s on %d processes, %zu bytes: %s (%s)\n",
                kumi_world_rank(), s ? "non-blocking " : "", tuned_ops[op].name, c.p, bytes,
                tuned_ops[op].algs[alg].name, why);
    return tuned_ops[op].algs[alg].fn;
}

static size_t tuned_bytes(size_t count, MPI_Datatype dt)
{
    return count * kumi_dt_size(dt);
}

/* ------------------------------------------------------------ entry points
 * One function per operation runs the chosen algorithm; the blocking entry
 * calls it with s == NULL, the schedule builder with the schedule. */
typedef int (*barrier_fn)(struct tuned_cx *);
typedef int (*bcast_fn)(struct tuned_cx *, void *, size_t, MPI_Datatype, int);
typedef int (*rooted_fn)(struct tuned_cx *, const void *, size_t, MPI_Datatype, void *, size_t,
                         MPI_Datatype, int);
typedef int (*all_fn)(struct tuned_cx *, const void *, size_t, MPI_Datatype, void *, size_t,
                      MPI_Datatype);
typedef int (*allv_fn)(struct tuned_cx *, const void *, size_t, MPI_Datatype, void *,
                       const MPI_Count *, const MPI_Aint *, MPI_Datatype);
typedef int (*a2av_fn)(struct tuned_cx *, const void *, const MPI_Count *, const MPI_Aint *,
                       MPI_Datatype, void *, const MPI_Count *, const MPI_Aint *, MPI_Datatype);
typedef int (*a2aw_fn)(struct tuned_cx *, const void *, const MPI_Count *, const MPI_Aint *,
                       const MPI_Datatype *, void *, const MPI_Count *, const MPI_Aint *,
                       const MPI_Datatype *);
typedef int (*reduce_fn)(struct tuned_cx *, const void *, void *, size_t, MPI_Datatype, MPI_Op,
                         int);
typedef int (*red_fn)(struct tuned_cx *, const void *, void *, size_t, MPI_Datatype, MPI_Op);
typedef int (*rs_fn)(struct tuned_cx *, const void *, void *, const MPI_Count *, MPI_Datatype, MPI_Op);

static int run_barrier(MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    barrier_fn fn = (barrier_fn)tuned_start(&cx, comm, s, OP_BARRIER, 0, MPI_OP_NULL);
    fn(&cx);
    return tuned_end(&cx);
}

static int run_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm,
                     struct kumi_sched *s)
{
    struct tuned_cx cx;
    bcast_fn fn = (bcast_fn)tuned_start(&cx, comm, s, OP_BCAST, tuned_bytes((size_t)count, dt), MPI_OP_NULL);
    fn(&cx, buf, (size_t)count, dt, root);
    return tuned_end(&cx);
}

static int run_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                      MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    size_t bytes = kumi_comm_rank(comm) == root ? tuned_bytes((size_t)rcount, rdt)
                                                : tuned_bytes((size_t)scount, sdt);
    rooted_fn fn = (rooted_fn)tuned_start(&cx, comm, s, OP_GATHER, bytes, MPI_OP_NULL);
    fn(&cx, sbuf, (size_t)scount, sdt, rbuf, (size_t)rcount, rdt, root);
    return tuned_end(&cx);
}

static int run_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                       MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    size_t bytes = kumi_comm_rank(comm) == root ? tuned_bytes((size_t)scount, sdt)
                                                : tuned_bytes((size_t)rcount, rdt);
    rooted_fn fn = (rooted_fn)tuned_start(&cx, comm, s, OP_SCATTER, bytes, MPI_OP_NULL);
    fn(&cx, sbuf, (size_t)scount, sdt, rbuf, (size_t)rcount, rdt, root);
    return tuned_end(&cx);
}

static int run_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                         MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    all_fn fn = (all_fn)tuned_start(&cx, comm, s, OP_ALLGATHER, tuned_bytes((size_t)rcount, rdt), MPI_OP_NULL);
    fn(&cx, sbuf, (size_t)scount, sdt, rbuf, (size_t)rcount, rdt);
    return tuned_end(&cx);
}

static int run_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                          const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt, MPI_Comm comm,
                          struct kumi_sched *s)
{
    struct tuned_cx cx;
    int p = kumi_comm_size(comm);
    size_t total = 0;
    for (int i = 0; i < p; i++) total += (size_t)rcounts[i];
    allv_fn fn = (allv_fn)tuned_start(&cx, comm, s, OP_ALLGATHERV, tuned_bytes(total, rdt) / (size_t)p, MPI_OP_NULL);
    fn(&cx, sbuf, (size_t)scount, sdt, rbuf, rcounts, displs, rdt);
    return tuned_end(&cx);
}

static int run_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                        MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    all_fn fn = (all_fn)tuned_start(&cx, comm, s, OP_ALLTOALL, tuned_bytes((size_t)rcount, rdt), MPI_OP_NULL);
    fn(&cx, sbuf, (size_t)scount, sdt, rbuf, (size_t)rcount, rdt);
    return tuned_end(&cx);
}

static int run_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                         MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    a2av_fn fn = (a2av_fn)tuned_start(&cx, comm, s, OP_ALLTOALLV, 0, MPI_OP_NULL);
    fn(&cx, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt);
    return tuned_end(&cx);
}

static int run_alltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                         const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                         const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm,
                         struct kumi_sched *s)
{
    struct tuned_cx cx;
    a2aw_fn fn = (a2aw_fn)tuned_start(&cx, comm, s, OP_ALLTOALLW, 0, MPI_OP_NULL);
    fn(&cx, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts);
    return tuned_end(&cx);
}

static int run_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op, int root,
                      MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    reduce_fn fn = (reduce_fn)tuned_start(&cx, comm, s, OP_REDUCE, tuned_bytes((size_t)count, dt), op);
    fn(&cx, sbuf, rbuf, (size_t)count, dt, op, root);
    return tuned_end(&cx);
}

static int run_red(int opid, const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    red_fn fn = (red_fn)tuned_start(&cx, comm, s, opid, tuned_bytes((size_t)count, dt), op);
    fn(&cx, sbuf, rbuf, (size_t)count, dt, op);
    return tuned_end(&cx);
}

static int run_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    int p = kumi_comm_size(comm);
    size_t total = 0;
    for (int i = 0; i < p; i++) total += (size_t)rcounts[i];
    rs_fn fn = (rs_fn)tuned_start(&cx, comm, s, OP_REDUCE_SCATTER, tuned_bytes(total, dt), op);
    fn(&cx, sbuf, rbuf, rcounts, dt, op);
    return tuned_end(&cx);
}

static int run_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                    MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    struct tuned_cx cx;
    int p = kumi_comm_size(comm);
    MPI_Count *counts = malloc(sizeof(MPI_Count) * (size_t)p);
    if (!counts) return kumi_error(MPI_ERR_NO_MEM, "coll/tuned: reduce_scatter_block: out of memory");
    for (int i = 0; i < p; i++) counts[i] = rcount;
    size_t total = (size_t)rcount * (size_t)p;
    rs_fn fn = (rs_fn)tuned_start(&cx, comm, s, OP_REDUCE_SCATTER_BLOCK, tuned_bytes(total, dt), op);
    fn(&cx, sbuf, rbuf, counts, dt, op);
    free(counts);               /* read while building only */
    return tuned_end(&cx);
}

/* The blocking collectives. */
static int tuned_barrier(MPI_Comm comm)
{
    return run_barrier(comm, NULL);
}

static int tuned_bcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    return run_bcast(buf, count, dt, root, comm, NULL);
}

static int tuned_gather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                        MPI_Datatype rdt, int root, MPI_Comm comm)
{
    return run_gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, NULL);
}

static int tuned_scatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                         MPI_Datatype rdt, int root, MPI_Comm comm)
{
    return run_scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, NULL);
}

static int tuned_allgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                           MPI_Datatype rdt, MPI_Comm comm)
{
    return run_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, NULL);
}

static int tuned_allgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                            const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt, MPI_Comm comm)
{
    return run_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, NULL);
}

static int tuned_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                          MPI_Datatype rdt, MPI_Comm comm)
{
    return run_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, NULL);
}

static int tuned_alltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                           MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                           MPI_Datatype rdt, MPI_Comm comm)
{
    return run_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, NULL);
}

static int tuned_alltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm)
{
    return run_alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm, NULL);
}

static int tuned_reduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                        int root, MPI_Comm comm)
{
    return run_reduce(sbuf, rbuf, count, dt, op, root, comm, NULL);
}

static int tuned_allreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                           MPI_Comm comm)
{
    return run_red(OP_ALLREDUCE, sbuf, rbuf, count, dt, op, comm, NULL);
}

static int tuned_reduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dt,
                                MPI_Op op, MPI_Comm comm)
{
    return run_reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, NULL);
}

static int tuned_reduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                      MPI_Op op, MPI_Comm comm)
{
    return run_reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm, NULL);
}

static int tuned_scan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                      MPI_Comm comm)
{
    return run_red(OP_SCAN, sbuf, rbuf, count, dt, op, comm, NULL);
}

static int tuned_exscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                        MPI_Comm comm)
{
    return run_red(OP_EXSCAN, sbuf, rbuf, count, dt, op, comm, NULL);
}

/* The schedule builders. */
static int tuned_ibarrier(MPI_Comm comm, struct kumi_sched *s)
{
    return run_barrier(comm, s);
}

static int tuned_ibcast(void *buf, MPI_Count count, MPI_Datatype dt, int root, MPI_Comm comm,
                        struct kumi_sched *s)
{
    return run_bcast(buf, count, dt, root, comm, s);
}

static int tuned_igather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                         MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    return run_gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, s);
}

static int tuned_iscatter(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                          MPI_Datatype rdt, int root, MPI_Comm comm, struct kumi_sched *s)
{
    return run_scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm, s);
}

static int tuned_iallgather(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                            MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    return run_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm, s);
}

static int tuned_iallgatherv(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf,
                             const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rdt,
                             MPI_Comm comm, struct kumi_sched *s)
{
    return run_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm, s);
}

static int tuned_ialltoall(const void *sbuf, MPI_Count scount, MPI_Datatype sdt, void *rbuf, MPI_Count rcount,
                           MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    return run_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm, s);
}

static int tuned_ialltoallv(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                            MPI_Datatype sdt, void *rbuf, const MPI_Count rcounts[], const MPI_Aint rdispls[],
                            MPI_Datatype rdt, MPI_Comm comm, struct kumi_sched *s)
{
    return run_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm, s);
}

static int tuned_ialltoallw(const void *sbuf, const MPI_Count scounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sdts[], void *rbuf, const MPI_Count rcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype rdts[], MPI_Comm comm,
                            struct kumi_sched *s)
{
    return run_alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, comm, s);
}

static int tuned_ireduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                         int root, MPI_Comm comm, struct kumi_sched *s)
{
    return run_reduce(sbuf, rbuf, count, dt, op, root, comm, s);
}

static int tuned_iallreduce(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                            MPI_Comm comm, struct kumi_sched *s)
{
    return run_red(OP_ALLREDUCE, sbuf, rbuf, count, dt, op, comm, s);
}

static int tuned_ireduce_scatter(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                 MPI_Datatype dt, MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    return run_reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm, s);
}

static int tuned_ireduce_scatter_block(const void *sbuf, void *rbuf, MPI_Count rcount, MPI_Datatype dt,
                                       MPI_Op op, MPI_Comm comm, struct kumi_sched *s)
{
    return run_reduce_scatter_block(sbuf, rbuf, rcount, dt, op, comm, s);
}

static int tuned_iscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm, struct kumi_sched *s)
{
    return run_red(OP_SCAN, sbuf, rbuf, count, dt, op, comm, s);
}

static int tuned_iexscan(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dt, MPI_Op op,
                         MPI_Comm comm, struct kumi_sched *s)
{
    return run_red(OP_EXSCAN, sbuf, rbuf, count, dt, op, comm, s);
}

/* ------------------------------------------------------------ component */
static int tuned_comm_query(MPI_Comm comm, int *priority, struct kumi_coll_fns *fns)
{
    (void)priority;                 /* keep the default: parameter coll_tuned_priority */
    if (kumi_comm_is_inter(comm)) return KUMI_UNAVAILABLE;    /* coll/basic's */
    fns->barrier = tuned_barrier;
    fns->bcast = tuned_bcast;
    fns->gather = tuned_gather;
    fns->scatter = tuned_scatter;
    fns->allgather = tuned_allgather;
    fns->allgatherv = tuned_allgatherv;
    fns->alltoall = tuned_alltoall;
    fns->alltoallv = tuned_alltoallv;
    fns->alltoallw = tuned_alltoallw;
    fns->reduce = tuned_reduce;
    fns->allreduce = tuned_allreduce;
    fns->reduce_scatter = tuned_reduce_scatter;
    fns->reduce_scatter_block = tuned_reduce_scatter_block;
    fns->scan = tuned_scan;
    fns->exscan = tuned_exscan;
    fns->ibarrier = tuned_ibarrier;
    fns->ibcast = tuned_ibcast;
    fns->igather = tuned_igather;
    fns->iscatter = tuned_iscatter;
    fns->iallgather = tuned_iallgather;
    fns->iallgatherv = tuned_iallgatherv;
    fns->ialltoall = tuned_ialltoall;
    fns->ialltoallv = tuned_ialltoallv;
    fns->ialltoallw = tuned_ialltoallw;
    fns->ireduce = tuned_ireduce;
    fns->iallreduce = tuned_iallreduce;
    fns->ireduce_scatter = tuned_ireduce_scatter;
    fns->ireduce_scatter_block = tuned_ireduce_scatter_block;
    fns->iscan = tuned_iscan;
    fns->iexscan = tuned_iexscan;
    return KUMI_OK;
}

/* kumi/coll.h pace_hint, for the pacing component: the algorithm this call
 * will run (tuned_choose, as tuned_start will: a forced one, the rules of a
 * file and the built-in table alike) and how many peers it sends to at
 * once: linear posts every send together; pairwise and Bruck send to one
 * peer a round.  Only the all-to-all family (the calls worth pacing). */
static int tuned_pace_hint(MPI_Comm comm, const char *coll, size_t bytes, struct kumi_pace_hint *hint)
{
    int op = !strcmp(coll, "alltoall") ? OP_ALLTOALL : !strcmp(coll, "alltoallv") ? OP_ALLTOALLV
           : !strcmp(coll, "alltoallw") ? OP_ALLTOALLW : -1;
    if (op < 0) return 0;
    /* bytes as run_alltoall* give them: the block for alltoall, 0 for v / w */
    struct tuned_call c = { .op = op, .p = kumi_comm_size(comm), .bytes = op == OP_ALLTOALL ? bytes : 0,
                            .commute = 1 };
    const char *why;
    const char *alg = tuned_ops[op].algs[tuned_choose(&c, &why)].name;
    hint->fanout = !strcmp(alg, "linear") ? 0 : 1;
    if (tuned_verbose > 0)
        fprintf(stderr, "coll/tuned[%d]: pace hint: %s on %d processes, %zu bytes: %s (%s): %s\n",
                kumi_world_rank(), coll, c.p, c.bytes, alg, why,
                hint->fanout ? "one peer at a time" : "every peer at once");
    return 1;
}

static char tuned_help[OP_COUNT][400];

static void tuned_register(void)
{
    for (int o = 0; o < OP_COUNT; o++) {
        char pname[64];
        int n = snprintf(tuned_help[o], sizeof tuned_help[o],
                         "Algorithm of %s (and its non-blocking and persistent forms): auto "
                         "(the decision table)", tuned_ops[o].mpiname);
        for (int a = 0; a < tuned_nalgs(o) && n > 0 && (size_t)n < sizeof tuned_help[o]; a++)
            n += snprintf(tuned_help[o] + n, sizeof tuned_help[o] - (size_t)n, ", %s%s",
                          tuned_ops[o].algs[a].name,
                          tuned_ops[o].algs[a].need & NEED_COMMUTE ? " (commutative ops)" :
                          tuned_ops[o].algs[a].need & NEED_POF2 ? " (power-of-two process counts)" :
                          tuned_ops[o].algs[a].need & NEED_EVEN ? " (even process counts)" : "");
        snprintf(pname, sizeof pname, "%s_algorithm", tuned_ops[o].name);
        kumi_param_register_string("coll", "tuned", pname, "auto", tuned_help[o], KUMI_LEVEL_USER,
                                   &tuned_forced_name[o]);
    }
    kumi_param_register_string("coll", "tuned", "table", "",
                               "File of decision rules tried before the built-in table, one per "
                               "line: `operation conditions algorithm`, e.g. `allreduce "
                               "p>=8,bytes<=64k rabenseifner` (conditions: * or p / bytes with "
                               "<, <=, =, >=, >; first matching rule wins)",
                               KUMI_LEVEL_TUNER, &tuned_table_file);
    kumi_param_register_size("coll", "tuned", "segment_size", 64 * 1024,
                             "Segment size (bytes) of the pipelined algorithms (bcast pipeline, "
                             "reduce pipeline); 0: the whole message in one segment", KUMI_LEVEL_TUNER, &tuned_segsize);
    kumi_param_register_int("coll", "tuned", "verbose", 0,
                            "1: print the algorithm chosen for every call (and why) on stderr",
                            KUMI_LEVEL_DEV, &tuned_verbose);
}

static int tuned_open(char *why, size_t whylen)
{
    tuned_nrules = 0;
    for (int o = 0; o < OP_COUNT; o++) {
        const char *v = tuned_forced_name[o];
        tuned_forced[o] = -1;
        if (!v || !*v || !strcmp(v, "auto")) continue;
        tuned_forced[o] = tuned_alg_index(o, v);
        if (tuned_forced[o] < 0) {
            int n = snprintf(why, whylen, "coll_tuned_%s_algorithm: unknown algorithm '%s' "
                             "(auto", tuned_ops[o].name, v);
            for (int a = 0; a < tuned_nalgs(o) && n > 0 && (size_t)n < whylen; a++)
                n += snprintf(why + n, whylen - (size_t)n, ", %s", tuned_ops[o].algs[a].name);
            if (n > 0 && (size_t)n < whylen) snprintf(why + n, whylen - (size_t)n, ")");
            kumi_warn("coll/tuned not used: %s", why);
            return KUMI_UNAVAILABLE;
        }
    }
    if (tuned_table_file && *tuned_table_file &&
        tuned_load_file(tuned_table_file, why, whylen) < 0) {
        kumi_warn("coll/tuned not used: %s", why);
        return KUMI_UNAVAILABLE;
    }
    if (tuned_parse_table(tuned_builtin_table, "built-in table", why, whylen) < 0)
        return KUMI_UNAVAILABLE;
    return KUMI_OK;
}

static void tuned_close(void)
{
    free(tuned_rules);
    tuned_rules = NULL;
    tuned_nrules = tuned_caprules = 0;
}

static const struct kumi_coll_ops tuned_ops_table = {
    .hdr = KUMI_COLL_OPS_HDR,
    .comm_query = tuned_comm_query,
    .pace_hint = tuned_pace_hint,
};

KUMI_EXPORT const struct kumi_component kumi_coll_tuned_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "coll",
    .name = "tuned",
    .version = { 0, 1, 0 },
    .description = "Several algorithms per collective, chosen by process count and message size",
    .priority = 30,
    .register_params = tuned_register,
    .open = tuned_open,
    .close = tuned_close,
    .ops = &tuned_ops_table,
};
