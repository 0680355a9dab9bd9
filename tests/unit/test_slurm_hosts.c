/* Unit test of tools/common/slurm_hosts.c: Slurm's compressed host lists
 * (SLURM_JOB_NODELIST) and per-node counts (SLURM_TASKS_PER_NODE).  The
 * expected expansions are those of `scontrol show hostnames` (Slurm 22.05). */
#include "ut.h"
#include "slurm_hosts.c"

static void expect(const char *list, const char *want)
{
    char **h = NULL, err[256] = "", got[4096] = "";
    int n = -1;
    UT_CASE(list);
    int rc = kumi_slurm_hosts_expand(list, &h, &n, err, sizeof err);
    CHECK(rc == 0, "\"%s\" refused: %s", list, err);
    if (rc) return;
    size_t off = 0;
    for (int i = 0; i < n && off < sizeof got; i++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%s", i ? " " : "", h[i]);
    CHECK(strcmp(got, want) == 0, "\"%s\" gave \"%s\", expected \"%s\"", list, got, want);
    kumi_slurm_hosts_free(h, n);
}

static void refuse(const char *list, const char *why)
{
    char **h = (char **)1, err[256] = "";
    int n = -1;
    UT_CASE(list ? list : "(null)");
    int rc = kumi_slurm_hosts_expand(list, &h, &n, err, sizeof err);
    CHECK(rc == -1, "\"%s\" accepted (%d hosts)", list, n);
    CHECK(h == NULL && n == 0, "refused list leaves hosts=%p n=%d", (void *)h, n);
    CHECK_HAS(err, why);
    if (rc == 0) kumi_slurm_hosts_free(h, n);
}

static void counts(const char *spec, const char *want)
{
    int *c = NULL, n = -1;
    char err[256] = "", got[1024] = "";
    UT_CASE(spec);
    int rc = kumi_slurm_counts_expand(spec, &c, &n, err, sizeof err);
    if (!want) {
        CHECK(rc == -1, "\"%s\" accepted", spec);
        CHECK(err[0] != 0, "no message for \"%s\"", spec);
        free(c);
        return;
    }
    CHECK(rc == 0, "\"%s\" refused: %s", spec, err);
    size_t off = 0;
    for (int i = 0; i < n && off < sizeof got; i++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%d", i ? " " : "", c[i]);
    CHECK(strcmp(got, want) == 0, "\"%s\" gave \"%s\", expected \"%s\"", spec, got, want);
    free(c);
}

int main(void)
{
    expect("node[01-03,7],gpu5", "node01 node02 node03 node7 gpu5");
    expect("kn[1-2]", "kn1 kn2");
    expect("kn1", "kn1");
    expect("r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2");
    expect("n[8-10]", "n8 n9 n10");
    expect("n[08-10]", "n08 n09 n10");
    expect("n[1-010]", "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
    expect("n[3,1-2]", "n3 n1 n2");
    expect("n[1-2],n1", "n1 n2 n1");
    expect("a,b c", "a b c");
    expect("a,,b", "a b");
    expect("n[1-2]x", "n1x n2x");
    expect("gpu-[0-1],cpu-[000-002]", "gpu-0 gpu-1 cpu-000 cpu-001 cpu-002");
    expect("x[7]", "x7");
    expect("n[99-101]", "n99 n100 n101");
    {
        char **h;
        int n;
        char err[128];
        UT_CASE("n[00000-99999]");
        CHECK_INT(kumi_slurm_hosts_expand("n[00000-99999]", &h, &n, err, sizeof err), 0);
        CHECK_INT(n, 100000);
        if (n == 100000) {
            CHECK(strcmp(h[0], "n00000") == 0 && strcmp(h[99999], "n99999") == 0 && strcmp(h[12345], "n12345") == 0,
                  "ends %s %s", h[0], h[99999]);
            kumi_slurm_hosts_free(h, n);
        }
    }
    refuse(NULL, "no host list");
    refuse("", "empty host list");
    refuse(" , ", "empty host list");
    refuse("n[010-1]", "descending range");
    refuse("x[]", "empty brackets");
    refuse("n[1-2", "not closed");
    refuse("n1-2]", "without '['");
    refuse("n[a-b]", "expected a number");
    refuse("n[1-]", "after '-'");
    refuse("n[1,]", "before ']'");
    refuse("n[1;2]", "unexpected ';'");
    refuse("n[0-9999999]", "longer than");
    refuse("a[0-999]b[0-999]c[0-9]", "more than");
    refuse("n[[1]]", "not closed");

    counts("2(x3),1", "2 2 2 1");
    counts("4", "4");
    counts("1,2,3", "1 2 3");
    counts("16(x2)", "16 16");
    counts("", NULL);
    counts("2(x0)", NULL);
    counts("2(3)", NULL);
    counts("2,", NULL);
    counts("x", NULL);
    counts("2(x2", NULL);
    counts("-1", NULL);
    return ut_done("test_slurm_hosts");
}
