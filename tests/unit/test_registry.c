/* Unit test of the MPI_COMPONENTS parser (framework/registry/registry.c), in
 * process: kumi_registry_open(0) reads MPI_COMPONENTS, with the build
 * tree's components (KUMI_COMPONENT_PATH, as the test runner sets it; or the
 * components linked into libmpi with --disable-dlopen), and nothing is
 * opened.  A list keeps only the components named, "^" excludes, white
 * space and empty items are ignored; every bad spec is refused with a
 * message (kumi_registry_error) that names the bad part and what exists.
 * This test links libmpi.so (the registry's functions are exported for
 * kumi_info), so that the components it loads find the library. */
#include <mpi.h>
#include "registry/registry.h"
#include "ut.h"
#include <stdbool.h>

KUMI_EXPORT int kumi_component_named(const char *framework, const char *name);

static int open_with(const char *spec)
{
    kumi_registry_close();
    if (spec) setenv("MPI_COMPONENTS", spec, 1);
    else unsetenv("MPI_COMPONENTS");
    return kumi_registry_open(0);
}

static struct kumi_comp_entry *entry(const char *fw, const char *name)
{
    struct kumi_comp_entry **e;
    int n = kumi_registry_entries(&e);
    for (int i = 0; i < n; i++)
        if (!strcmp(e[i]->framework, fw) && !strcmp(e[i]->name, name)) return e[i];
    return NULL;
}

/* "found" or "excluded" for every component of fw, as "name:f name:x ..." */
static void states(const char *fw, char *out, size_t len)
{
    struct kumi_comp_entry **e;
    int n = kumi_registry_entries(&e);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(e[i]->framework, fw) || e[i]->status == KUMI_COMP_REFUSED) continue;
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s:%s", l ? " " : "", e[i]->name,
                 e[i]->status == KUMI_COMP_FOUND ? "f" : e[i]->status == KUMI_COMP_EXCLUDED ? "x" : "?");
    }
}

#define CHECK_GOOD(spec) \
    do { const char *s_ = (spec); int rc_ = open_with(s_); \
         CHECK(rc_ == MPI_SUCCESS, "MPI_COMPONENTS=\"%s\" refused: %s", s_, kumi_registry_error()); } while (0)
#define CHECK_BAD(spec, ...) \
    do { int rc_ = open_with(spec); \
         CHECK(rc_ != MPI_SUCCESS, "MPI_COMPONENTS=\"%s\" accepted", spec); \
         CHECK_HAS(kumi_registry_error(), "MPI_COMPONENTS: ", __VA_ARGS__); } while (0)

int main(void)
{
    printf("no random input\n");
    setenv("KUMI_INTERNAL_NO_PKGLIBDIR", "1", 1);   /* only the build tree's components */
    UT_CASE("components found");
    int rc = open_with(NULL);
    CHECK(rc == MPI_SUCCESS, "no MPI_COMPONENTS: %s", kumi_registry_error());
    struct kumi_comp_entry **all;
    int n = kumi_registry_entries(&all);
    bool linked = n > 0 && !strcmp(all[0]->path, "(linked in)");
    printf("%d components (%s)\n", n, linked ? "linked in" : getenv("KUMI_COMPONENT_PATH") ?: "no KUMI_COMPONENT_PATH");
    const char *need[][2] = { { "p2p", "self" }, { "p2p", "shmem" }, { "p2p", "tcp" },
                              { "coll", "basic" }, { "coll", "tuned" } };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        struct kumi_comp_entry *e = entry(need[i][0], need[i][1]);
        CHECK(e && e->status == KUMI_COMP_FOUND, "component %s/%s not found (KUMI_COMPONENT_PATH=%s)", need[i][0],
              need[i][1], getenv("KUMI_COMPONENT_PATH") ?: "");
    }
    if (ut_failed) return ut_done("test_registry");

    char st[512];
    UT_CASE("a list keeps only those");
    CHECK_GOOD("p2p=tcp,self");
    CHECK(entry("p2p", "shmem")->status == KUMI_COMP_EXCLUDED, "p2p/shmem is not excluded");
    CHECK_HAS(entry("p2p", "shmem")->reason, "excluded by MPI_COMPONENTS");
    CHECK(entry("p2p", "tcp")->status == KUMI_COMP_FOUND && entry("p2p", "self")->status == KUMI_COMP_FOUND,
          "the listed ones stay");
    CHECK(entry("coll", "basic")->status == KUMI_COMP_FOUND, "another framework is left alone");
    CHECK(kumi_component_named("p2p", "tcp") && kumi_component_named("p2p", "self") &&
          !kumi_component_named("p2p", "shmem") && !kumi_component_named("coll", "basic"),
          "kumi_component_named answers from the list");

    UT_CASE("^ excludes");
    CHECK_GOOD("coll=^basic");
    states("coll", st, sizeof st);
    CHECK(entry("coll", "basic")->status == KUMI_COMP_EXCLUDED && entry("coll", "tuned")->status == KUMI_COMP_FOUND,
          "coll=^basic gives %s", st);
    CHECK(!kumi_component_named("coll", "tuned"), "an exclusion names nothing");

    UT_CASE("white space and empty items");
    CHECK_GOOD(" p2p = self , tcp ;; coll = ^ basic , tuned ; ");
    states("p2p", st, sizeof st);
    CHECK(entry("p2p", "shmem")->status == KUMI_COMP_EXCLUDED && entry("p2p", "tcp")->status == KUMI_COMP_FOUND,
          "p2p: %s", st);
    states("coll", st, sizeof st);
    CHECK(entry("coll", "basic")->status == KUMI_COMP_EXCLUDED && entry("coll", "tuned")->status == KUMI_COMP_EXCLUDED,
          "coll: %s", st);
    CHECK_GOOD("p2p=self,,tcp,");
    CHECK_GOOD("");
    CHECK(entry("p2p", "shmem")->status == KUMI_COMP_FOUND, "an empty MPI_COMPONENTS keeps everything");

    UT_CASE("bad specs");
    CHECK_BAD("p2p", "'p2p' is not framework=list");
    CHECK_BAD("p2p=self;tcp", "'tcp' is not framework=list");
    CHECK_BAD("foo=bar", "unknown framework 'foo'", "(frameworks: rpim, p2p, coll");
    CHECK_BAD("P2P=self", "unknown framework 'P2P'");
    CHECK_BAD("=self", "'=self'", "no framework", "(frameworks: rpim, p2p, coll");
    CHECK_BAD("p2p=nosuch", "unknown component 'nosuch' in framework p2p", "(available: ", "self", "tcp");
    CHECK_BAD("p2p=self,nosuch,tcp", "unknown component 'nosuch' in framework p2p");
    CHECK_BAD("coll=^nosuch", "unknown component 'nosuch' in framework coll");
    CHECK_BAD("p2p=self tcp", "unknown component 'self tcp' in framework p2p");
    CHECK_BAD("abi=x", "unknown framework 'abi'", "(frameworks: rpim, p2p, coll, pacing, ckpt, accel)");   /* no contract header yet */
    CHECK_BAD("p2p=self;coll=basic;p2p=tcp", "framework p2p is given twice");
    CHECK_BAD("p2p=", "empty component list for framework p2p");
    CHECK_BAD("p2p=^", "empty component list for framework p2p");
    CHECK_BAD("p2p= , ,", "empty component list for framework p2p");
    CHECK_BAD("p2p=self,^tcp", "'^' must come first in the list of p2p", "found '^tcp'");
    CHECK_BAD("p2p=^self,^tcp", "'^' must come first in the list of p2p", "found '^tcp'");
    /* the error stays until the registry is closed */
    CHECK(kumi_registry_open(0) != MPI_SUCCESS, "a second open after a bad spec succeeds");
    CHECK_HAS(kumi_registry_error(), "found '^tcp'");
    CHECK_GOOD("p2p=self");
    CHECK(kumi_registry_error()[0] == '\0', "the message is cleared by a good spec: \"%s\"", kumi_registry_error());
    kumi_registry_close();
    return ut_done("test_registry");
}
