/* The program of tests/scripts/abi_gotswap.sh: linked against libA.so (its
 * who() returns 1) and libkumi_gotswap; loads libplug.so (linked against
 * libB.so, whose who() returns 2) with dlopen by its bare name, found through
 * this program's RUNPATH ($ORIGIN/lib).  This is a program built against one
 * MPI that loads a plug-in built against another: both import the same name.
 *
 *   prog MODE      one scenario per process (rules stay for the process's life)
 *
 * Prints "ok: ..." per check and "FAIL: ..." for a failed one; exits 1 if any
 * check failed.  MODEs: base swap lazy rule ruledep ruledlsym dlmopen replaced nosym noobj
 * badarg main threads, and fortran when built with -DWITH_FORTRAN (linked
 * against libfort.so too; see each function). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kumi_gotswap.h"

int who(void);
int who2(void);

static int failures;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (cond) printf("ok: ");                                                          \
        else { printf("FAIL: "); failures++; }                                             \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
    } while (0)

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) { printf("FAIL: dlsym %s: %s\n", name, dlerror()); exit(1); }
    return p;
}

static void *open_or_die(const char *name, int mode)
{
    void *h = dlopen(name, mode);
    if (!h) { printf("FAIL: dlopen %s: %s\n", name, dlerror()); exit(1); }
    return h;
}

static int (*plug_who)(void), (*plug_who2)(void);
static void *(*plug_who_addr)(void);
static void **(*plug_who_slot)(void);

static void *open_plug(int mode)
{
    void *h = open_or_die("libplug.so", mode);
    plug_who = (int (*)(void))sym(h, "plug_who");
    plug_who2 = (int (*)(void))sym(h, "plug_who2");
    plug_who_addr = (void *(*)(void))sym(h, "plug_who_addr");
    plug_who_slot = (void **(*)(void))sym(h, "plug_who_slot");
    return h;
}

/* libB's who: libB is loaded as the plug-in's dependency (or first, here) */
static void *who_of_b(const char *name)
{
    void *hb = open_or_die("libB.so", RTLD_NOW | RTLD_LOCAL);
    return sym(hb, name);
}

/* the permissions of the page holding p, from /proc/self/maps ("" if none) */
static void perms_of(const void *p, char out[5])
{
    out[0] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perm[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 && (uintptr_t)p >= lo && (uintptr_t)p < hi) {
            memcpy(out, perm, 5);
            break;
        }
    }
    if (f) fclose(f);
}

/* Without a swap the plug-in reaches libA's who: the problem gotswap solves. */
static void mode_base(void)
{
    open_plug(RTLD_NOW);
    CHECK(plug_who() == 1, "without a swap the plug-in's who() is libA's (1): %d", plug_who());
    CHECK(who() == 1, "the program's who() is libA's (1): %d", who());
}

static void mode_swap(void)
{
    void *h = open_plug(RTLD_NOW);
    void *tb = who_of_b("who"), *ta = dlsym(RTLD_DEFAULT, "who");
    char before[5], after[5];
    void **slot = plug_who_slot();
    if (slot) perms_of(slot, before);
    void *old = NULL;
    int n = kumi_got_swap("libplug.so", "who", tb, &old);
    CHECK(n >= 1, "kumi_got_swap(libplug.so, who) rewrote %d slot(s) %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(old == ta, "the old target is libA's who (%p): %p", ta, old);
    CHECK(plug_who() == 2, "after the swap the plug-in reaches libB's who (2): %d", plug_who());
    CHECK(who() == 1, "the program still reaches libA's who (1): %d", who());
    CHECK(plug_who_addr() == tb, "&who taken in the plug-in (through its GOT) is libB's who");
    if (slot) {
        perms_of(slot, after);
        CHECK(before[0] && before[1] == '-', "the GOT slot's page was read-only (RELRO): %s", before);
        CHECK(strcmp(before, after) == 0, "its protection is restored: %s -> %s", before, after);
        CHECK(*slot == tb, "the slot itself holds libB's who");
    }
    n = kumi_got_swap("libplug.so", "who", tb, NULL);
    CHECK(n == 0, "swapping again to the same target rewrites nothing: %d", n);
    void *prev = NULL;
    n = kumi_got_swap("libplug.so", "who", old, &prev);
    CHECK(n >= 1 && prev == tb, "swapping back: %d slot(s), previous target libB's who", n);
    CHECK(plug_who() == 1, "after swapping back the plug-in reaches libA's who again: %d", plug_who());
    n = kumi_got_swap_handle(h, "who", tb, NULL);
    CHECK(n >= 1, "kumi_got_swap_handle on the plug-in's handle: %d %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(plug_who() == 2, "after it the plug-in reaches libB's who: %d", plug_who());
    CHECK(who() == 1, "the program still reaches libA's who: %d", who());
    n = kumi_got_swap("libplug*", "who2", who_of_b("who2"), NULL);
    CHECK(n >= 1 && plug_who2() == 20, "a glob pattern (libplug*) swaps who2: %d, plug_who2 %d", n, plug_who2());
}

/* RTLD_LAZY: who2's slot (called only: a JUMP_SLOT) still holds its PLT stub
 * (unless the objects were linked -z now); the old target is the real one. */
static void mode_lazy(void)
{
    open_plug(RTLD_LAZY);
    void *tb2 = who_of_b("who2"), *ta2 = dlsym(RTLD_DEFAULT, "who2");
    void *old = NULL;
    int n = kumi_got_swap("libplug.so", "who2", tb2, &old);
    CHECK(n == 1, "kumi_got_swap(who2) on a lazily bound plug-in: %d %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(old == ta2, "the old target is libA's who2 (%p), not the PLT stub: %p", ta2, old);
    CHECK(plug_who2() == 20, "the plug-in's who2() is libB's (20): %d", plug_who2());
    n = kumi_got_swap("libplug.so", "who2", old, NULL);
    CHECK(n == 1 && plug_who2() == 10, "restored: %d slot, plug_who2 %d", n, plug_who2());
    CHECK(plug_who2() == 10, "and it stays libA's (the lazy resolver is not run again): %d", plug_who2());
}

static int who_main_rule(void) { return 4; }

/* A rule set before the plug-in is loaded: dlopen (hooked) patches it, also
 * when it is loaded again after dlclose. */
static void mode_rule(void)
{
    void *tb = who_of_b("who");
    int n = kumi_got_rule_add("libplug.so", "who", tb);
    CHECK(n == 0, "kumi_got_rule_add before the plug-in is loaded rewrites nothing: %d %s", n,
          n < 0 ? kumi_got_error() : "");
    void *h = open_plug(RTLD_NOW);
    CHECK(plug_who() == 2, "the plug-in dlopen'ed (bare name, RUNPATH) after the rule reaches libB: %d",
          plug_who());
    CHECK(who() == 1, "the program still reaches libA: %d", who());
    CHECK(plug_who_addr() == tb, "&who in the plug-in is libB's who");
    /* the plug-in's own dlopen (hooked): its run path and $ORIGIN, not the program's */
    void *(*plug_dlopen)(const char *) = (void *(*)(const char *))sym(h, "plug_dlopen");
    void *hx = plug_dlopen("libextra.so");
    CHECK(hx && ((int (*)(void))sym(hx, "who"))() == 5, "the plug-in's dlopen(\"libextra.so\") searches its "
          "own run path ($ORIGIN/sub): %s", hx ? "found" : dlerror());
    void *hx2 = plug_dlopen("$ORIGIN/sub/libextra.so");
    CHECK(hx2 && hx2 == hx, "$ORIGIN in the name is the plug-in's folder: %s", hx2 ? "same object" : dlerror());
    if (hx2) dlclose(hx2);
    if (hx) dlclose(hx);
    dlclose(h);
    void *again = dlopen("libplug.so", RTLD_NOLOAD | RTLD_LAZY);
    CHECK(again == NULL, "the plug-in was unloaded by dlclose");
    if (again) dlclose(again);
    open_plug(RTLD_LAZY);
    CHECK(plug_who() == 2, "loaded again (lazily) it is patched again: %d", plug_who());
    /* several rules at once; one replaces the earlier rule for libplug.so / who */
    static int (*const back)(void) = who_main_rule;
    struct kumi_got_rule rules[] = {{"libplug.so", "who2", who_of_b("who2")}, {"libplug.so", "who", (void *)back}};
    n = kumi_got_rules_add(rules, 2);
    CHECK(n == 2 && plug_who2() == 20 && plug_who() == 4, "kumi_got_rules_add of 2 rules: %d, %d %d", n,
          plug_who2(), plug_who());
    struct kumi_got_rule bad[] = {{"libplug.so", "who", tb}, {"libplug.so", "who", NULL}};
    n = kumi_got_rules_add(bad, 2);
    CHECK(n == KUMI_GOT_EINVAL && strstr(kumi_got_error(), "rule 1") && plug_who() == 4,
          "a batch with a bad rule adds none: %d: %s", n, kumi_got_error());
}

/* The rule's object is loaded as a dependency of the one dlopen'ed. */
static void mode_ruledep(void)
{
    void *tb = who_of_b("who");
    int n = kumi_got_rule_add("libplug.so", "who", tb);
    CHECK(n == 0, "kumi_got_rule_add: %d %s", n, n < 0 ? kumi_got_error() : "");
    void *h = open_or_die("libwrap.so", RTLD_NOW);
    int (*wrap_who)(void) = (int (*)(void))sym(h, "wrap_who");
    CHECK(wrap_who() == 2, "libplug.so loaded as libwrap.so's dependency reaches libB: %d", wrap_who());
    CHECK(who() == 1, "the program still reaches libA: %d", who());
}

/* A dlopen that bypasses the hook (a pointer from dlsym): kumi_got_rules_apply. */
static void mode_ruledlsym(void)
{
    void *tb = who_of_b("who");
    int n = kumi_got_rule_add("libplug.so", "who", tb);
    CHECK(n == 0, "kumi_got_rule_add: %d", n);
    void *(*real_dlopen)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_DEFAULT, "dlopen");
    void *h = real_dlopen(LIBDIR "/libplug.so", RTLD_NOW);
    if (!h) { printf("FAIL: dlopen: %s\n", dlerror()); exit(1); }
    int (*pw)(void) = (int (*)(void))sym(h, "plug_who");
    CHECK(pw() == 1, "loaded around the hook the plug-in is not patched yet: %d", pw());
    n = kumi_got_rules_apply();
    CHECK(n >= 1, "kumi_got_rules_apply patches it: %d %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(pw() == 2, "then it reaches libB: %d", pw());
    n = kumi_got_rules_apply();
    CHECK(n == 0, "nothing new loaded: kumi_got_rules_apply rewrites nothing: %d", n);
}

/* A plug-in loaded with dlmopen into a new namespace (hooked too): it binds
 * to libB there, and the rule sends it to the program's own who_main(). */
static int who_main(void) { return 3; }
static void mode_dlmopen(void)
{
    int n = kumi_got_rule_add("libplug.so", "who", (void *)who_main);
    CHECK(n == 0, "kumi_got_rule_add: %d", n);
    void *h = dlmopen(LM_ID_NEWLM, LIBDIR "/libplug.so", RTLD_NOW);
    if (!h) { printf("FAIL: dlmopen: %s\n", dlerror()); exit(1); }
    Lmid_t id = LM_ID_BASE;
    CHECK(dlinfo(h, RTLD_DI_LMID, &id) == 0 && id != LM_ID_BASE, "the plug-in is in a new namespace");
    int (*pw)(void) = (int (*)(void))sym(h, "plug_who");
    CHECK(pw() == 3, "dlmopen (hooked) patched it: %d", pw());
    CHECK(who() == 1, "the program still reaches libA: %d", who());
    void *tb = who_of_b("who"), *old = NULL;
    n = kumi_got_swap_handle(h, "who", tb, &old);
    CHECK(n >= 1 && old == (void *)who_main && pw() == 2, "kumi_got_swap_handle in that namespace: %d, %d", n, pw());
    /* a namespace made around the hook: reached through its handle */
    void *(*real_dlmopen)(Lmid_t, const char *, int) =
        (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_DEFAULT, "dlmopen");
    void *h2 = real_dlmopen(LM_ID_NEWLM, LIBDIR "/libwrap.so", RTLD_NOW);
    if (!h2) { printf("FAIL: dlmopen: %s\n", dlerror()); exit(1); }
    int (*ww)(void) = (int (*)(void))sym(h2, "wrap_who");
    CHECK(ww() == 2, "a plug-in dlmopen'ed around the hook binds to libB in its namespace: %d", ww());
    n = kumi_got_swap("libplug.so", "who", (void *)who_main, NULL);
    CHECK(n == 1 && ww() == 2 && pw() == 3, "a pattern reaches the hooked namespace only: %d", n);
    n = kumi_got_rules_apply();
    CHECK(n == 0 && ww() == 2, "nor do the rules (its namespace is unknown to gotswap): %d, %d", n, ww());
    Lmid_t id2;
    dlinfo(h2, RTLD_DI_LMID, &id2);
    void *hp2 = real_dlmopen(id2, LIBDIR "/libplug.so", RTLD_NOW | RTLD_NOLOAD);
    n = hp2 ? kumi_got_swap_handle(hp2, "who", (void *)who_main, &old) : -99;
    CHECK(n >= 1 && ww() == 3, "kumi_got_swap_handle on its libplug.so: %d, %d %s", n, ww(), n < 0 ? kumi_got_error() : "");
    CHECK(pw() == 3, "the first namespace's plug-in unchanged: %d", pw());
}

static void mode_nosym(void)
{
    open_plug(RTLD_NOW);
    void *old = (void *)1;
    int n = kumi_got_swap("libplug.so", "no_such_symbol", (void *)mode_nosym, &old);
    CHECK(n == 0 && old == NULL, "a symbol the object does not import: 0 slots, old NULL (%d)", n);
    n = kumi_got_swap(NULL, "no_such_symbol", (void *)mode_nosym, &old);
    CHECK(n == 0, "every loaded object (ld.so, libc, the vdso, ...) read without an error: %d %s", n,
          n < 0 ? kumi_got_error() : "");
    n = kumi_got_swap("*", "no_such_symbol", (void *)mode_nosym, &old);
    CHECK(n == 0, "pattern '*' too: %d", n);
    CHECK(plug_who() == 1, "nothing changed: %d", plug_who());
}

static void mode_noobj(void)
{
    open_plug(RTLD_NOW);
    void *old = (void *)1;
    int n = kumi_got_swap("libnothing*.so", "who", (void *)mode_noobj, &old);
    CHECK(n == KUMI_GOT_ENOOBJ, "a pattern that matches no object: KUMI_GOT_ENOOBJ (%d)", n);
    CHECK(old == NULL, "old target NULL");
    CHECK(strstr(kumi_got_error(), "libnothing*.so") != NULL, "the message names the pattern: %s", kumi_got_error());
    CHECK(strcmp(kumi_got_strerror(n), "no loaded object matches") == 0, "strerror: %s", kumi_got_strerror(n));
    n = kumi_got_swap("/nowhere/libplug.so", "who", (void *)mode_noobj, NULL);
    CHECK(n == KUMI_GOT_ENOOBJ, "a path pattern that matches no object: %d", n);
    CHECK(plug_who() == 1, "nothing changed: %d", plug_who());
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[8192];
    size_t n;
    int ok = a && b;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
    if (a) fclose(a);
    if (b && fclose(b) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* The object's file is no longer the one loaded: replaced (another ELF file,
 * junk) or removed.  A clear error, no crash, the slots untouched. */
static void mode_replaced(void)
{
    char dir[512], path[600], tmp[600];
    snprintf(dir, sizeof dir, "%s/gotswap.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) { printf("FAIL: mkdtemp\n"); exit(1); }
    snprintf(path, sizeof path, "%s/libplugx.so", dir);
    snprintf(tmp, sizeof tmp, "%s/new", dir);
    if (copy_file(LIBDIR "/libplug.so", path) != 0) { printf("FAIL: copy\n"); exit(1); }
    void *tb = who_of_b("who");      /* (libB is found loaded: the copy has no RUNPATH to it) */
    void *h = open_or_die(path, RTLD_NOW);
    int (*pw)(void) = (int (*)(void))sym(h, "plug_who");
    int n = kumi_got_swap("libplugx.so", "who", tb, NULL);
    CHECK(n >= 1 && pw() == 2, "the copy is swapped while its file is intact: %d", n);
    kumi_got_swap("libplugx.so", "who", dlsym(RTLD_DEFAULT, "who"), NULL);
    /* another ELF file in its place (rename: the loaded mapping keeps the old one) */
    if (copy_file(LIBDIR "/libwrap.so", tmp) != 0 || rename(tmp, path) != 0) { printf("FAIL: replace\n"); exit(1); }
    n = kumi_got_swap("libplugx.so", "who", tb, NULL);
    CHECK(n == KUMI_GOT_EELF && strstr(kumi_got_error(), "libplugx.so") && strstr(kumi_got_error(), "loaded object"),
          "file replaced by another ELF file: KUMI_GOT_EELF (%d: %s)", n, kumi_got_error());
    CHECK(pw() == 1, "the slot is untouched: %d", pw());
    FILE *f = fopen(tmp, "w");
    if (f) { fputs("not an ELF file\n", f); fclose(f); }
    rename(tmp, path);
    n = kumi_got_swap("libplugx.so", "who", tb, NULL);
    CHECK(n == KUMI_GOT_EELF && strstr(kumi_got_error(), "not an ELF"), "replaced by junk: %d: %s", n, kumi_got_error());
    unlink(path);
    n = kumi_got_swap("libplugx.so", "who", tb, NULL);
    CHECK(n == KUMI_GOT_EELF && strstr(kumi_got_error(), "cannot open"), "removed: %d: %s", n, kumi_got_error());
    n = kumi_got_swap(NULL, "who", tb, NULL);
    CHECK(n == KUMI_GOT_EELF, "a swap over every object reports the broken one: %d: %s", n, kumi_got_error());
    CHECK(pw() == 1, "the slot is still untouched: %d", pw());
    CHECK(who() == 2, "while the other objects were swapped (the program reaches libB now): %d", who());
    rmdir(dir);
}

static void mode_badarg(void)
{
    open_plug(RTLD_NOW);
    int n = kumi_got_swap("libplug.so", NULL, (void *)mode_badarg, NULL);
    CHECK(n == KUMI_GOT_EINVAL && strstr(kumi_got_error(), "symbol"), "NULL symbol: EINVAL (%d: %s)", n,
          kumi_got_error());
    n = kumi_got_swap("libplug.so", "who", NULL, NULL);
    CHECK(n == KUMI_GOT_EINVAL && strstr(kumi_got_error(), "target"), "NULL target: EINVAL (%d: %s)", n,
          kumi_got_error());
    n = kumi_got_swap_handle(NULL, "who", (void *)mode_badarg, NULL);
    CHECK(n == KUMI_GOT_EINVAL, "NULL handle: EINVAL (%d: %s)", n, kumi_got_error());
    n = kumi_got_rule_add("libplug.so", "", (void *)mode_badarg);
    CHECK(n == KUMI_GOT_EINVAL, "rule with an empty symbol: EINVAL (%d)", n);
    CHECK(plug_who() == 1, "nothing changed: %d", plug_who());
}

/* The main program's own slots (pattern ""): PIE or not. */
static void mode_main(void)
{
    open_plug(RTLD_NOW);
    void *tb = who_of_b("who");
    void *old = NULL;
    int n = kumi_got_swap("", "who", tb, &old);
    CHECK(n >= 1, "kumi_got_swap(\"\" = the program, who): %d %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(who() == 2, "the program now reaches libB's who: %d", who());
    CHECK(plug_who() == 1, "the plug-in still reaches libA's: %d", plug_who());
    n = kumi_got_swap_handle(dlopen(NULL, RTLD_NOW), "who", old, NULL);
    CHECK(n >= 1 && who() == 1, "swapped back through dlopen(NULL)'s handle: %d, who %d", n, who());
}

/* Swaps back and forth while another thread calls through the slot. */
static volatile int stop;
static void *caller(void *arg)
{
    long *bad = arg, seen1 = 0, seen2 = 0;
    while (!stop) {
        int r = plug_who();
        if (r == 1) seen1++;
        else if (r == 2) seen2++;
        else (*bad)++;
    }
    printf("caller thread: %ld x 1, %ld x 2\n", seen1, seen2);
    return NULL;
}

static void mode_threads(void)
{
    open_plug(RTLD_NOW);
    void *tb = who_of_b("who"), *ta = dlsym(RTLD_DEFAULT, "who");
    long bad = 0;
    pthread_t t;
    pthread_create(&t, NULL, caller, &bad);
    int ok = 1;
    for (int i = 0; i < 400 && ok; i++) {
        ok = kumi_got_swap("libplug.so", "who", tb, NULL) >= 1 && plug_who() == 2;
        ok = ok && kumi_got_swap("libplug.so", "who", ta, NULL) >= 1 && plug_who() == 1;
    }
    stop = 1;
    pthread_join(t, NULL);
    CHECK(ok, "400 swaps there and back while a thread calls the plug-in");
    CHECK(bad == 0, "the thread only ever saw 1 or 2 (%ld others)", bad);
}

#ifdef WITH_FORTRAN
int fort_who(void);
/* A Fortran library loaded at start (DT_NEEDED), built against libB. */
static void mode_fortran(void)
{
    CHECK(fort_who() == 1, "without a swap the Fortran library's who() is libA's (1): %d", fort_who());
    void *tb = sym(open_or_die("libB.so", RTLD_NOW | RTLD_NOLOAD), "who");
    int n = kumi_got_swap("libfort.so", "who", tb, NULL);
    CHECK(n >= 1, "kumi_got_swap(libfort.so, who): %d %s", n, n < 0 ? kumi_got_error() : "");
    CHECK(fort_who() == 2, "the Fortran library now reaches libB's who (2): %d", fort_who());
    CHECK(who() == 1, "the program still reaches libA's: %d", who());
}
#endif

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *m = argc > 1 ? argv[1] : "";
    static const struct { const char *name; void (*fn)(void); } modes[] = {
        {"base", mode_base}, {"swap", mode_swap}, {"lazy", mode_lazy}, {"rule", mode_rule},
        {"ruledep", mode_ruledep}, {"ruledlsym", mode_ruledlsym}, {"dlmopen", mode_dlmopen}, {"replaced", mode_replaced}, {"nosym", mode_nosym},
        {"noobj", mode_noobj}, {"badarg", mode_badarg}, {"main", mode_main}, {"threads", mode_threads},
#ifdef WITH_FORTRAN
        {"fortran", mode_fortran},
#endif
    };
    for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
        if (strcmp(m, modes[i].name) == 0) {
            modes[i].fn();
            return failures ? 1 : 0;
        }
    fprintf(stderr, "usage: %s MODE\n", argv[0]);
    return 2;
}
