/* Unit test of mpiexec's host lists and rank mapping (tools/mpiexec/hosts.c,
 * included: it is pure logic): -host specs, hostfile lines in the Open MPI
 * ("h slots=N") and MPICH ("h:N") forms with comments and blank lines, the
 * messages for bad syntax (naming FILE:LINE), duplicate hosts, and the
 * placement of ranks: by slot (default), by node, -ppn, and slots exceeded
 * (an error unless oversubscribe). */
#include "ut.h"
#include "../../tools/mpiexec/hosts.c"
#include <unistd.h>

static char err[1024];

static void map_is(const struct mx_hostlist *hl, int np, int ppn, int bynode, int over, const char *want)
{
    int *h = calloc((size_t)np, sizeof *h);
    char got[1100] = "";
    err[0] = 0;
    if (mx_hosts_map(hl, np, ppn, bynode, over, h, err, sizeof err) < 0) {
        snprintf(got, sizeof got, "error: %s", err);
    } else {
        for (int r = 0; r < np; r++) snprintf(got + strlen(got), sizeof got - strlen(got), "%d", h[r]);
    }
    CHECK(strcmp(got, want) == 0, "map np=%d ppn=%d bynode=%d over=%d: got '%s', expected '%s'", np, ppn, bynode,
          over, got, want);
    free(h);
}

int main(void)
{
    struct mx_hostlist hl = { 0 };

    UT_CASE("spec");
    CHECK_INT(mx_hosts_add_spec(&hl, "h1,h2:4", err, sizeof err), 0);
    CHECK_INT(hl.n, 2);
    CHECK(strcmp(hl.h[0].name, "h1") == 0 && hl.h[0].slots == 1, "h1 has 1 slot");
    CHECK(strcmp(hl.h[1].name, "h2") == 0 && hl.h[1].slots == 4, "h2 has 4 slots");
    CHECK_INT(mx_hosts_add_spec(&hl, "h1:2", err, sizeof err), 0);
    CHECK_INT(hl.n, 2);
    CHECK_INT(hl.h[0].slots, 3);            /* named twice: slots add */
    mx_hosts_free(&hl);
    CHECK_INT(mx_hosts_add_spec(&hl, "h1,,h2", err, sizeof err), -1);
    CHECK_HAS(err, "empty host name");
    CHECK_INT(mx_hosts_add_spec(&hl, "h1:x", err, sizeof err), -1);
    CHECK_HAS(err, "invalid slot count 'x'");
    CHECK_INT(mx_hosts_add_spec(&hl, "h1:0", err, sizeof err), -1);
    CHECK_HAS(err, "invalid slot count");
    CHECK_INT(mx_hosts_add_spec(&hl, "bad/host", err, sizeof err), -1);
    CHECK_HAS(err, "invalid host name 'bad/host'");
    CHECK_INT(mx_hosts_add_spec(&hl, "", err, sizeof err), -1);
    mx_hosts_free(&hl);

    UT_CASE("lines");
    CHECK_INT(mx_hosts_parse_line(&hl, "# a comment\n", "hf", 1, err, sizeof err), 0);
    CHECK_INT(mx_hosts_parse_line(&hl, "   \n", "hf", 2, err, sizeof err), 0);
    CHECK_INT(mx_hosts_parse_line(&hl, "node1 slots=4   # four\n", "hf", 3, err, sizeof err), 0);
    CHECK_INT(mx_hosts_parse_line(&hl, "node2:2\n", "hf", 4, err, sizeof err), 0);
    CHECK_INT(mx_hosts_parse_line(&hl, "\tnode3 slots=2 max_slots=8\n", "hf", 5, err, sizeof err), 0);
    CHECK_INT(mx_hosts_parse_line(&hl, "node4", "hf", 6, err, sizeof err), 0);
    CHECK_INT(hl.n, 4);
    CHECK_INT(hl.h[0].slots, 4);
    CHECK_INT(hl.h[1].slots, 2);
    CHECK_INT(hl.h[2].slots, 2);
    CHECK_INT(hl.h[3].slots, 1);
    CHECK_INT(mx_hosts_total_slots(&hl, 0), 9);
    CHECK_INT(mx_hosts_total_slots(&hl, 3), 12);
    CHECK_INT(mx_hosts_parse_line(&hl, "node5 slot=4\n", "my.hosts", 7, err, sizeof err), -1);
    CHECK_HAS(err, "my.hosts:7:", "unexpected 'slot=4'");
    CHECK_INT(mx_hosts_parse_line(&hl, "node5 slots=four\n", "my.hosts", 8, err, sizeof err), -1);
    CHECK_HAS(err, "my.hosts:8:", "invalid slot count");
    CHECK_INT(mx_hosts_parse_line(&hl, "node5:2 slots=3\n", "my.hosts", 9, err, sizeof err), -1);
    CHECK_HAS(err, "my.hosts:9:", "unexpected 'slots=3'");
    CHECK_INT(mx_hosts_parse_line(&hl, "no(de slots=3\n", "my.hosts", 10, err, sizeof err), -1);
    CHECK_HAS(err, "my.hosts:10:", "invalid host name 'no(de'");
    CHECK_INT(mx_hosts_parse_line(&hl, "node6:\n", "my.hosts", 11, err, sizeof err), -1);
    CHECK_HAS(err, "my.hosts:11:", "invalid slot count");
    CHECK_INT(hl.n, 4);

    UT_CASE("mapping");
    /* slots 4,2,2,1 */
    map_is(&hl, 9, 0, 0, 0, "000011223");
    map_is(&hl, 5, 0, 0, 0, "00001");
    map_is(&hl, 9, 0, 1, 0, "012301200");
    map_is(&hl, 6, 0, 1, 0, "012301");
    map_is(&hl, 10, 0, 0, 0, "error: 10 processes asked for, but the host list has 9 slots (4 hosts); "
           "add slots (-host h:N, 'h slots=N'), lower -n, or allow it with --oversubscribe");
    map_is(&hl, 11, 0, 0, 1, "00001122301");
    map_is(&hl, 8, 2, 0, 0, "00112233");
    map_is(&hl, 8, 2, 1, 0, "01230123");
    map_is(&hl, 9, 2, 0, 0, "error: 9 processes asked for, but the host list has 8 slots (4 hosts); "
           "add slots (-host h:N, 'h slots=N'), lower -n, or allow it with --oversubscribe");
    mx_hosts_free(&hl);

    UT_CASE("file");
    char path[] = "/tmp/kumi-ut-hosts-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("# cluster\n\nh1 slots=2\nh2:3\n# end\n", f);
    fclose(f);
    CHECK_INT(mx_hosts_read_file(&hl, path, err, sizeof err), 0);
    CHECK_INT(hl.n, 2);
    CHECK_INT(mx_hosts_total_slots(&hl, 0), 5);
    mx_hosts_free(&hl);
    f = fopen(path, "w");
    fputs("h1 slots=2\n\nh2 cpus=3\n", f);
    fclose(f);
    CHECK_INT(mx_hosts_read_file(&hl, path, err, sizeof err), -1);
    char want[128];
    snprintf(want, sizeof want, "%s:3:", path);
    CHECK_HAS(err, want, "unexpected 'cpus=3'");
    mx_hosts_free(&hl);
    f = fopen(path, "w");
    fputs("# nothing\n", f);
    fclose(f);
    CHECK_INT(mx_hosts_read_file(&hl, path, err, sizeof err), -1);
    CHECK_HAS(err, "names no host");
    unlink(path);
    CHECK_INT(mx_hosts_read_file(&hl, path, err, sizeof err), -1);
    CHECK_HAS(err, "cannot read hostfile", path);
    mx_hosts_free(&hl);
    return ut_done("test_hosts");
}
