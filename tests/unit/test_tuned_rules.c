/* Unit test of coll/tuned's decision table (components/coll/tuned/coll_tuned.c),
 * in process: the rule parser (the built-in table and files given with
 * coll_tuned_table), the choice among rules, forced algorithms, and the
 * messages for bad input, which must name the source, the line and the bad
 * part.  The parser is static, so this file includes coll_tuned.c; the
 * algorithms come from the component's convenience library.
 *
 * Inputs the parser accepts today but should not are checked with KNOWN()
 * (ut.h): reported, not failures. */
#include "coll_tuned.c"
#include "ut.h"
#include <unistd.h>

static char err[512];

static void reset(void)
{
    tuned_nrules = 0;
    for (int o = 0; o < OP_COUNT; o++) tuned_forced[o] = -1;
    err[0] = '\0';
}

static int parse(const char *text)
{
    err[0] = '\0';
    return tuned_parse_table(text, "rules.txt", err, sizeof err);
}

static int opid(const char *name)
{
    for (int o = 0; o < OP_COUNT; o++) if (!strcmp(tuned_ops[o].name, name)) return o;
    return -1;
}

static const char *choose(const char *op, int p, size_t bytes, int commute, const char **why)
{
    struct tuned_call c = { .op = opid(op), .p = p, .bytes = bytes, .commute = commute };
    const char *w;
    int a = tuned_choose(&c, why ? why : &w);
    return tuned_ops[c.op].algs[a].name;
}

#define CHECK_CHOICE(op, p, bytes, commute, want) \
    do { const char *g_ = choose(op, p, bytes, commute, NULL); \
         CHECK(!strcmp(g_, want), "%s on %d processes, %zu bytes%s: %s, expected %s", op, p, (size_t)(bytes), \
               (commute) ? "" : " (non-commutative)", g_, want); } while (0)

static void test_valid(void)
{
    UT_CASE("the built-in table");
    reset();
    CHECK(parse(tuned_builtin_table) == 0, "built-in table: %s", err);
    int lines = 0;
    for (const char *p = tuned_builtin_table; *p; p++) lines += *p == '\n';
    CHECK_INT(tuned_nrules, lines);
    for (int o = 0; o < OP_COUNT; o++) {
        int last = -1;
        for (int i = 0; i < tuned_nrules; i++) if (tuned_rules[i].op == o) last = i;
        CHECK(last >= 0, "the built-in table has no rule for %s", tuned_ops[o].name);
    }

    UT_CASE("rule syntax");
    reset();
    CHECK(parse("# comment line\n"
                "\n"
                "   \t  \n"
                "allreduce\tp>=8,bytes<=64k   rabenseifner   # trailing comment\r\n"
                "bcast p<4 linear\n"
                "bcast p=4,bytes>1M pipeline\n"
                "bcast bytes>=2g,p>1 scatter_allgather\n"
                "barrier * linear") == 0, "valid rules refused: %s", err);
    CHECK_INT(tuned_nrules, 5);
    const struct tuned_rule *r = tuned_rules;
    CHECK(r[0].op == opid("allreduce") && r[0].alg == tuned_alg_index(r[0].op, "rabenseifner") && r[0].ncond == 2,
          "rule 1 is op %d alg %d with %d conditions", r[0].op, r[0].alg, r[0].ncond);
    CHECK(r[0].cond[0].var == 0 && r[0].cond[0].cmp == CMP_GE && r[0].cond[0].val == 8, "p>=8");
    CHECK(r[0].cond[1].var == 1 && r[0].cond[1].cmp == CMP_LE && r[0].cond[1].val == 65536, "bytes<=64k");
    CHECK(r[1].cond[0].cmp == CMP_LT && r[1].cond[0].val == 4, "p<4");
    CHECK(r[2].cond[0].cmp == CMP_EQ && r[2].cond[1].cmp == CMP_GT && r[2].cond[1].val == 1u << 20, "p=4,bytes>1M");
    CHECK(r[3].cond[0].cmp == CMP_GE && r[3].cond[0].val == 2ull << 30, "bytes>=2g");
    CHECK(r[4].op == opid("barrier") && r[4].ncond == 0, "barrier * linear has no condition");
    CHECK(r[2].alg == tuned_alg_index(opid("bcast"), "pipeline"), "bcast ... pipeline");

    UT_CASE("comparisons");
    static const struct { const char *c; unsigned long long at[3]; } cmps[] = {
        /* holds at value - 1, value, value + 1 */
        { "p<5", { 1, 0, 0 } }, { "p<=5", { 1, 1, 0 } }, { "p=5", { 0, 1, 0 } },
        { "p>=5", { 0, 1, 1 } }, { "p>5", { 0, 0, 1 } },
    };
    for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) {
        struct tuned_cond c;
        CHECK(tuned_parse_cond(cmps[i].c, &c) == 0 && c.var == 0 && c.val == 5, "condition %s", cmps[i].c);
        for (int k = 0; k < 3; k++) {
            int h = tuned_cond_holds(&c, (unsigned long long)(4 + k), 0);
            CHECK(h == (int)cmps[i].at[k], "%s at p = %d: %d, expected %d", cmps[i].c, 4 + k, h, (int)cmps[i].at[k]);
        }
        c.var = 1;
        CHECK(tuned_cond_holds(&c, 99, 5) == (int)cmps[i].at[1], "%s on bytes", cmps[i].c);
    }

    UT_CASE("choosing");
    reset();
    CHECK(parse("allreduce p>=8 ring\n"
                "allreduce bytes<=1k reduce_bcast\n"
                "allgather * recursive_doubling\n"
                "alltoall p=3 bruck\n"
                "alltoall bytes<100 pairwise\n") == 0, "%s", err);
    CHECK(parse(tuned_builtin_table) == 0, "%s", err);        /* as tuned_open: file rules first */
    CHECK_CHOICE("allreduce", 8, 100, 1, "ring");
    CHECK_CHOICE("allreduce", 4, 100, 1, "reduce_bcast");
    CHECK_CHOICE("allreduce", 8, 100, 0, "reduce_bcast");        /* ring needs a commutative op */
    CHECK_CHOICE("allreduce", 4, 1024, 1, "reduce_bcast");       /* bytes<=1k holds at 1024 */
    CHECK_CHOICE("allreduce", 4, 1025, 1, "recursive_doubling"); /* built-in: bytes<=4k */
    CHECK_CHOICE("allreduce", 4, 1 << 20, 1, "rabenseifner");   /* built-in: * rabenseifner */
    CHECK_CHOICE("allreduce", 4, 1 << 20, 0, "recursive_doubling");
    CHECK_CHOICE("allgather", 8, 10, 1, "recursive_doubling");
    CHECK_CHOICE("allgather", 6, 10, 1, "bruck");               /* not a power of two: next rules */
    CHECK_CHOICE("alltoall", 3, 5000, 1, "bruck");
    CHECK_CHOICE("alltoall", 5, 99, 1, "pairwise");
    CHECK_CHOICE("alltoall", 5, 100, 1, "bruck");               /* built-in: bytes<=256 */
    const char *why = NULL;
    choose("allreduce", 8, 100, 1, &why);
    CHECK(!strcmp(why, "table"), "why is \"%s\", expected \"table\"", why);

    UT_CASE("forced algorithm");
    tuned_forced[opid("allreduce")] = tuned_alg_index(opid("allreduce"), "rabenseifner");
    choose("allreduce", 8, 100, 1, &why);
    CHECK_CHOICE("allreduce", 8, 100, 1, "rabenseifner");
    CHECK(!strcmp(why, "forced"), "why is \"%s\", expected \"forced\"", why);
    CHECK_CHOICE("allreduce", 8, 100, 0, "reduce_bcast");        /* cannot run it: the table decides */
    choose("allreduce", 8, 100, 0, &why);
    CHECK_HAS(why, "forced algorithm cannot run this call");
    tuned_forced[opid("allreduce")] = -1;

    UT_CASE("fallback");
    reset();
    CHECK(parse("reduce p>100 linear\n") == 0, "%s", err);
    CHECK_CHOICE("reduce", 4, 10, 1, "binomial");               /* no rule holds: the first algorithm */
    choose("reduce", 4, 10, 1, &why);
    CHECK(!strcmp(why, "fallback"), "why is \"%s\", expected \"fallback\"", why);
    CHECK_CHOICE("bcast", 4, 10, 1, "binomial");                /* no rule at all for bcast */
}

#define CHECK_BAD(text, ...) \
    do { reset(); CHECK(parse(text) < 0, "\"%s\" was accepted", text); CHECK_HAS(err, __VA_ARGS__); } while (0)

static void test_bad(void)
{
    UT_CASE("bad rules");
    CHECK_BAD("allreduce p>=8", "rules.txt:1:", "expected `operation conditions algorithm`");
    CHECK_BAD("allreduce", "rules.txt:1:", "expected `operation conditions algorithm`");
    CHECK_BAD("allreduce p>=8 ring ring", "rules.txt:1:", "expected `operation conditions algorithm`");
    CHECK_BAD("# one\n\nallreduc * ring", "rules.txt:3:", "unknown operation 'allreduc'");
    CHECK_BAD("allreduce * rign", "rules.txt:1:", "allreduce has no algorithm 'rign'");
    CHECK_BAD("bcast * rabenseifner", "bcast has no algorithm 'rabenseifner'");
    CHECK_BAD("allreduce q>=8 ring", "bad condition 'q>=8'");
    CHECK_BAD("allreduce p=>8 ring", "bad condition 'p=>8'");
    CHECK_BAD("allreduce p>=8x ring", "bad condition 'p>=8x'");
    CHECK_BAD("allreduce p>= ring", "bad condition 'p>='");
    CHECK_BAD("allreduce bytes<=64kb ring", "bad condition 'bytes<=64kb'");
    CHECK_BAD("allreduce bytes~4 ring", "bad condition 'bytes~4'");
    CHECK_BAD("allreduce p>=1,bytes<=64k,bad ring", "rules.txt:1:", "bad condition 'bad'");
    CHECK_BAD("allreduce p>=99999999999999999999999 ring", "bad condition 'p>=99999999999999999999999'");
    CHECK_BAD("allreduce p>1,p>2,p>3,p>4,p>5 ring", "bad condition 'p>5'", "at most 4");
    char longline[700];
    memset(longline, 'x', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    char text[800];
    snprintf(text, sizeof text, "barrier * linear\n%s\n", longline);
    CHECK_BAD(text, "rules.txt:2: line too long");
    /* a bad rule after good ones: the good ones stay, the message names the line */
    reset();
    CHECK(parse("barrier * linear\nbcast * linear\nscan * nope\n") < 0, "bad third line accepted");
    CHECK_HAS(err, "rules.txt:3:", "scan has no algorithm 'nope'");

    UT_CASE("bad rules accepted today");
    reset();
    KNOWN(parse("allreduce p>=-1 ring") < 0, "'p>=-1' is accepted (strtoull takes the minus: p >= 2^64-1)");
    reset();
    KNOWN(parse("allreduce bytes<=99999999999g ring") < 0, "'bytes<=99999999999g' is accepted (the suffix overflows)");
    reset();
    KNOWN(parse("allreduce , ring") < 0, "conditions ',' are accepted as no condition (always)");
}

/* stderr of the component's open() goes to a file */
static int open_captured(char *why, size_t whylen, char *out, size_t outlen)
{
    char path[] = "/tmp/kumi-ut-tuned-XXXXXX";
    int fd = mkstemp(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    int rc = tuned_open(why, whylen);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, outlen - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return rc;
}

static void test_open(void)
{
    char why[256], out[1024], dir[] = "/tmp/kumi-ut-tuned-d-XXXXXX", path[300];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    for (int o = 0; o < OP_COUNT; o++) tuned_forced_name[o] = "auto";

    UT_CASE("open: a rules file");
    snprintf(path, sizeof path, "%s/table", dir);
    FILE *f = fopen(path, "w");
    fputs("# mine\nallreduce p>=2 ring\n", f);
    fclose(f);
    tuned_table_file = path;
    CHECK_INT(open_captured(why, sizeof why, out, sizeof out), KUMI_OK);
    CHECK(out[0] == '\0', "a good file prints nothing, got \"%s\"", out);
    CHECK_CHOICE("allreduce", 2, 10, 1, "ring");
    tuned_close();

    UT_CASE("open: a bad rules file");
    f = fopen(path, "w");
    fputs("allreduce p>=2 ring\nallreduce p>=2 ringg\n", f);
    fclose(f);
    CHECK_INT(open_captured(why, sizeof why, out, sizeof out), KUMI_UNAVAILABLE);
    char want[400];
    snprintf(want, sizeof want, "%s:2: allreduce has no algorithm 'ringg'", path);
    CHECK_HAS(why, want);
    CHECK_HAS(out, "coll/tuned not used", want);
    tuned_close();

    UT_CASE("open: a missing rules file");
    snprintf(path, sizeof path, "%s/none", dir);
    CHECK_INT(open_captured(why, sizeof why, out, sizeof out), KUMI_UNAVAILABLE);
    CHECK_HAS(why, "coll_tuned_table: cannot open", path, "No such file");
    tuned_close();
    tuned_table_file = "";

    UT_CASE("open: an unknown forced algorithm");
    tuned_forced_name[opid("allreduce")] = "fastest";
    CHECK_INT(open_captured(why, sizeof why, out, sizeof out), KUMI_UNAVAILABLE);
    CHECK_HAS(why, "coll_tuned_allreduce_algorithm: unknown algorithm 'fastest'",
              "(auto, recursive_doubling, reduce_bcast, rabenseifner, ring)");
    tuned_close();
    tuned_forced_name[opid("allreduce")] = "ring";
    CHECK_INT(open_captured(why, sizeof why, out, sizeof out), KUMI_OK);
    CHECK_INT(tuned_forced[opid("allreduce")], tuned_alg_index(opid("allreduce"), "ring"));
    tuned_close();
    tuned_forced_name[opid("allreduce")] = "auto";
    snprintf(path, sizeof path, "%s/table", dir);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    printf("no random input\n");
    test_valid();
    test_bad();
    test_open();
    reset();
    tuned_close();
    return ut_done("test_tuned_rules");
}
