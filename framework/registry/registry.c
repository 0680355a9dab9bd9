/* Component registry: discovery, parameters, MPI_COMPONENTS selection.
 *
 * Discovery: the components linked into libmpi (--disable-dlopen builds:
 * KUMI_STATIC_LIST from config.h), or else every kumi_<fw>_<name>.so in
 * KUMI_PKGLIBDIR and then in each folder of KUMI_COMPONENT_PATH, loaded with
 * libltdl.  A file is refused, with a one-line reason, when its name is not
 * kumi_<fw>_<name>.so, its framework is unknown, it duplicates a component
 * already found (the first one wins), it cannot be loaded, it lacks the
 * symbol kumi_<fw>_<name>_component, its ABI version differs, the names
 * inside differ from the file name, or its ops table breaks the framework's
 * contract (kumi/component.h: another major, a table shorter than the
 * mandatory part, a newer coll minor, p2p capabilities without their
 * operations or a p2p table without send / reaches / eager_limit).  An
 * accepted component's entry holds the registry's copies of its struct
 * kumi_component and of its ops table (zero-filled to the full size this
 * library knows, so operations a shorter table lacks are NULL); comp->ops
 * points to that copy, and nothing in the library reads the component's
 * own table.  KUMI_INTERNAL_NO_PKGLIBDIR=1 skips
 * KUMI_PKGLIBDIR: the test suite and the benchmarks run the build tree's
 * components, never older installed ones.
 *
 * Then every component's parameters are registered (<fw>_<name>_priority
 * first), MPI_COMPONENTS is applied, and with do_open the kept components
 * are asked whether they can run here. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ltdl.h>

#include <kumi/ckpt.h>
#include <kumi/accel.h>
#include <kumi/coll.h>
#include <kumi/p2p.h>
#include <kumi/pacing.h>
#include <kumi/rpim.h>

#include "registry/registry.h"

#ifndef KUMI_PKGLIBDIR
#define KUMI_PKGLIBDIR "/usr/local/lib/kumi"
#endif

/* A framework exists once it has a contract header (kumi/<fw>.h with its
 * ops table and KUMI_<FW>_CONTRACT_*): one row in contracts[] and one name
 * in kumi_frameworks[], in the same order. */
KUMI_EXPORT const char *const kumi_frameworks[] = { "rpim", "p2p", "coll", "pacing", "ckpt", "accel", NULL };
#define NFW ((int)(sizeof kumi_frameworks / sizeof kumi_frameworks[0]) - 1)

static int p2p_check(const void *ops, char *why, size_t len);
static int coll_check(const void *ops, char *why, size_t len);

static const struct fw_contract {
    unsigned major, minor;
    size_t size, min_size;    /* sizeof the table this library knows; its mandatory part */
    int newer_minor_ok;       /* 0: a component built against a newer minor is refused */
    /* Rules of the framework's own on the (full-size) copy: 0, or -1 after
     * writing the reason. */
    int (*check)(const void *ops, char *why, size_t len);
} contracts[] = {
    { KUMI_RPIM_CONTRACT_MAJOR, KUMI_RPIM_CONTRACT_MINOR, sizeof(struct kumi_rpim_ops), KUMI_RPIM_OPS_MIN_SIZE, 1,
      NULL },
    { KUMI_P2P_CONTRACT_MAJOR, KUMI_P2P_CONTRACT_MINOR, sizeof(struct kumi_p2p_ops), KUMI_P2P_OPS_MIN_SIZE, 1,
      p2p_check },
    { KUMI_COLL_CONTRACT_MAJOR, KUMI_COLL_CONTRACT_MINOR, sizeof(struct kumi_coll_ops), KUMI_COLL_OPS_MIN_SIZE, 0,
      coll_check },
    { KUMI_PACING_CONTRACT_MAJOR, KUMI_PACING_CONTRACT_MINOR, sizeof(struct kumi_pacing_ops),
      KUMI_PACING_OPS_MIN_SIZE, 1, NULL },
    { KUMI_CKPT_CONTRACT_MAJOR, KUMI_CKPT_CONTRACT_MINOR, sizeof(struct kumi_ckpt_ops), KUMI_CKPT_OPS_MIN_SIZE, 1,
      NULL },
    { KUMI_ACCEL_CONTRACT_MAJOR, KUMI_ACCEL_CONTRACT_MINOR, sizeof(struct kumi_accel_ops),
      KUMI_ACCEL_OPS_MIN_SIZE, 1, NULL },
};
_Static_assert(sizeof contracts / sizeof contracts[0] == (size_t)NFW, "one contract per framework");

/* The registry's copy of an ops table, big enough for every framework's. */
union ops_copy {
    struct kumi_ops_hdr hdr;
    struct kumi_rpim_ops rpim;
    struct kumi_p2p_ops p2p;
    struct kumi_coll_ops coll;
    struct kumi_pacing_ops pacing;
    struct kumi_ckpt_ops ckpt;
    struct kumi_accel_ops accel;
};

#if !defined(KUMI_WANT_DLOPEN)
KUMI_STATIC_DECLS
static const struct kumi_component *const static_components[] = { KUMI_STATIC_LIST NULL };
#endif

/* An entry plus what the registry keeps privately; the public part comes first. */
struct reg_entry {
    struct kumi_comp_entry e;
    int seq;                 /* discovery order, for a stable sort */
    int opened;              /* open() said yes: close() is due */
    char realpath[PATH_MAX]; /* to skip a file reached twice */
    struct kumi_component comp;   /* e.comp points here once accepted ... */
    union ops_copy ops;           /* ... and comp.ops here */
};

/* What MPI_COMPONENTS says about one framework. */
enum sel_mode { SEL_ALL = 0, SEL_ONLY, SEL_EXCEPT };
struct fw_sel {
    enum sel_mode mode;
    char **names;
    int n;
};

static struct reg_entry **entries;
static int nentries, capentries;
static struct fw_sel selection[NFW];
static struct kumi_comp_entry **avail_arrays[NFW];
static int loaded, opened, open_rc;
static char errmsg[1024];
#ifdef KUMI_WANT_DLOPEN
static int ltdl_up;
#endif
static long long base_verbose;
static int warned_refusal;

static int fw_index(const char *fw)
{
    for (int i = 0; i < NFW; i++)
        if (fw && !strcmp(fw, kumi_frameworks[i])) return i;
    return -1;
}

static void fw_list(char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < NFW; i++) {
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", i ? ", " : "", kumi_frameworks[i]);
    }
}

/* Refused files are reported by the first process that sees them: mpiexec
 * (or a singleton / tool), else rank 0.  The processes mpiexec starts inherit
 * KUMI_INTERNAL_REGISTRY_WARNED and stay quiet about the same files. */
static int should_warn(void)
{
    if (getenv("KUMI_INTERNAL_REGISTRY_QUIET") || getenv("KUMI_INTERNAL_REGISTRY_WARNED")) return 0;
    const char *r = getenv("KUMI_RANK");
    return !r || !*r || strcmp(r, "0") == 0 || kumi_verbose_level > 0;
}

static struct reg_entry *entry_new(const char *fw, const char *name, const char *path)
{
    if (nentries == capentries) {
        int ncap = capentries ? 2 * capentries : 16;
        struct reg_entry **n = realloc(entries, ncap * sizeof *n);
        if (!n) return NULL;
        entries = n;
        capentries = ncap;
    }
    struct reg_entry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->e.framework, sizeof r->e.framework, "%s", fw ? fw : "");
    snprintf(r->e.name, sizeof r->e.name, "%s", name ? name : "");
    snprintf(r->e.path, sizeof r->e.path, "%s", path);
    r->e.status = KUMI_COMP_FOUND;
    r->seq = nentries;
    entries[nentries++] = r;
    return r;
}

static void refuse(struct reg_entry *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct reg_entry *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->e.reason, sizeof r->e.reason, fmt, ap);
    va_end(ap);
    r->e.status = KUMI_COMP_REFUSED;
    r->e.comp = NULL;
    kumi_log(1, "registry: refused %s: %s", r->e.path, r->e.reason);
    /* A duplicate is normal (a build tree shadowing an installation); anything
     * else is a broken file the user should hear about. */
    if (strncmp(r->e.reason, "duplicate of ", 13) != 0 && should_warn()) {
        kumi_warn("component file %s refused: %s", r->e.path, r->e.reason);
        warned_refusal = 1;
    }
}

/* The accepted entry with this framework and name, if any. */
static struct reg_entry *find_accepted(const char *fw, const char *name)
{
    for (int i = 0; i < nentries; i++) {
        struct reg_entry *r = entries[i];
        if (r->e.status != KUMI_COMP_REFUSED && !strcmp(r->e.framework, fw) && !strcmp(r->e.name, name))
            return r;
    }
    return NULL;
}

/* p2p: the operations every transport needs, and each capability flag's. */
static int p2p_check(const void *ops, char *why, size_t len)
{
    const struct kumi_p2p_ops *o = ops;
    const char *missing = !o->send ? "send" : !o->reaches ? "reaches" : !o->eager_limit ? "eager_limit" : NULL;
    if (missing) {
        snprintf(why, len, "lacks %s, which every p2p transport must have", missing);
        return -1;
    }
    if (o->caps & KUMI_P2P_CAP_RGET) {
        missing = !o->rget ? "rget" : !o->pull ? "pull" : NULL;
        if (missing) {
            snprintf(why, len, "advertises KUMI_P2P_CAP_RGET but lacks %s", missing);
            return -1;
        }
    }
    if (o->caps & KUMI_P2P_CAP_RMA) {
        missing = !o->mem_reg ? "mem_reg" : !o->mem_dereg ? "mem_dereg" : !o->rma ? "rma" : NULL;
        if (missing) {
            snprintf(why, len, "advertises KUMI_P2P_CAP_RMA but lacks %s", missing);
            return -1;
        }
    }
    return 0;
}

static int coll_check(const void *ops, char *why, size_t len)
{
    if (((const struct kumi_coll_ops *)ops)->comm_query) return 0;
    snprintf(why, len, "lacks comm_query, which every coll component must have");
    return -1;
}

/* The framework's contract: check c's ops table and take a full-size copy
 * (r->ops) of it; returns 0 if accepted. */
static int check_contract(struct reg_entry *r, const struct kumi_component *c, int fwi)
{
    const struct fw_contract *k = &contracts[fwi];
    const char *fw = kumi_frameworks[fwi];
    if (!c->ops) {
        refuse(r, "no ops table (the %s framework needs a struct kumi_%s_ops)", fw, fw);
        return -1;
    }
    struct kumi_ops_hdr h;
    memcpy(&h, c->ops, sizeof h);
    if (h.major != k->major) {
        refuse(r, "built against %s contract v%u.%u, this library has %s contract v%u.%u (another major version: "
               "rebuild it against Kumi %s headers)", fw, h.major, h.minor, fw, k->major, k->minor,
               KUMI_VERSION_STRING);
        return -1;
    }
    if (h.size < k->min_size) {
        refuse(r, "%s ops table (contract v%u.%u) is %u bytes, shorter than the %zu bytes of the mandatory part of "
               "%s contract v%u.x (this library has v%u.%u)", fw, h.major, h.minor, h.size, k->min_size, fw,
               k->major, k->major, k->minor);
        return -1;
    }
    if (h.minor > k->minor && !k->newer_minor_ok) {
        refuse(r, "built against %s contract v%u.%u, newer than this library's %s contract v%u.%u, and a %s "
               "component fills tables the library owns (rebuild it against Kumi %s headers)", fw, h.major,
               h.minor, fw, k->major, k->minor, fw, KUMI_VERSION_STRING);
        return -1;
    }
    memset(&r->ops, 0, sizeof r->ops);
    memcpy(&r->ops, c->ops, h.size < k->size ? h.size : k->size);
    if (fwi == fw_index("p2p")) {
        uint64_t known = KUMI_P2P_CAP_RGET | KUMI_P2P_CAP_RMA | KUMI_P2P_CAP_EXTERNAL32 | KUMI_P2P_CAP_NOBUDGET;
        if (r->ops.p2p.caps & ~known)
            kumi_log(2, "registry: %s/%s: capability bits %#llx unknown to this library, ignored", c->framework,
                     c->name, (unsigned long long)(r->ops.p2p.caps & ~known));
        r->ops.p2p.caps &= known;
    }
    char why[200];
    if (k->check && k->check(&r->ops, why, sizeof why) != 0) {
        refuse(r, "%s ops table (contract v%u.%u) %s (this library has %s contract v%u.%u)", fw, h.major, h.minor,
               why, fw, k->major, k->minor);
        return -1;
    }
    if (h.minor != k->minor || h.size != k->size)
        kumi_log(2, "registry: %s/%s: %s contract v%u.%u (%u bytes), this library has v%u.%u (%zu bytes)",
                 c->framework, c->name, fw, h.major, h.minor, h.size, k->major, k->minor, k->size);
    return 0;
}

/* Checks common to linked-in and loaded components; returns 0 if accepted. */
static int check_component(struct reg_entry *r, const struct kumi_component *c, const char *fw, const char *name)
{
    if (c->abi_version != KUMI_COMPONENT_ABI_VERSION) {
        refuse(r, "component ABI version %d, this library needs %d (rebuild it against Kumi %s headers)",
               c->abi_version, KUMI_COMPONENT_ABI_VERSION, KUMI_VERSION_STRING);
        return -1;
    }
    if (!c->framework || !c->name) {
        refuse(r, "framework or name field is NULL");
        return -1;
    }
    if ((fw && strcmp(c->framework, fw)) || (name && strcmp(c->name, name))) {
        refuse(r, "names itself %s/%s but the file name says %s/%s", c->framework, c->name, fw, name);
        return -1;
    }
    if (fw_index(c->framework) < 0) {
        char fws[256];
        fw_list(fws, sizeof fws);
        refuse(r, "unknown framework '%s' (known: %s)", c->framework, fws);
        return -1;
    }
    struct reg_entry *dup = find_accepted(c->framework, c->name);
    if (dup && dup != r) {
        refuse(r, "duplicate of %s", dup->e.path);
        return -1;
    }
    snprintf(r->e.framework, sizeof r->e.framework, "%s", c->framework);
    snprintf(r->e.name, sizeof r->e.name, "%s", c->name);
    if (check_contract(r, c, fw_index(c->framework)) != 0) return -1;
    r->comp = *c;
    r->comp.ops = &r->ops;
    r->e.comp = &r->comp;
    r->e.status = KUMI_COMP_FOUND;
    return 0;
}

#if !defined(KUMI_WANT_DLOPEN)
static void add_linked_in(void)
{
    for (int i = 0; static_components[i]; i++) {
        const struct kumi_component *c = static_components[i];
        struct reg_entry *r = entry_new(c->framework, c->name, "(linked in)");
        if (!r) return;
        check_component(r, c, NULL, NULL);
    }
}
#else
static lt_dladvise load_advise;

static void load_file(const char *dir, const char *fname)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    char real[PATH_MAX];
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    for (int i = 0; i < nentries; i++)
        if (!strcmp(entries[i]->realpath, real)) {
            kumi_log(2, "registry: %s already seen as %s", path, entries[i]->e.path);
            return;
        }

    /* kumi_<fw>_<name>.so */
    char fw[64] = "", name[64] = "";
    const char *base = fname + 5;
    size_t blen = strlen(base) - 3;
    const char *us = memchr(base, '_', blen);
    if (us && us > base && (size_t)(us - base) < sizeof fw && blen - (size_t)(us - base) - 1 < sizeof name &&
        blen - (size_t)(us - base) - 1 > 0) {
        memcpy(fw, base, us - base);
        fw[us - base] = '\0';
        memcpy(name, us + 1, blen - (us - base) - 1);
        name[blen - (us - base) - 1] = '\0';
    }
    struct reg_entry *dup = fw[0] ? find_accepted(fw, name) : NULL;
    struct reg_entry *r = entry_new(fw[0] ? fw : "?", name[0] ? name : fname, path);
    if (!r) return;
    snprintf(r->realpath, sizeof r->realpath, "%s", real);
    if (!fw[0]) {
        refuse(r, "file name is not kumi_<framework>_<name>.so");
        return;
    }
    if (fw_index(fw) < 0) {
        char fws[256];
        fw_list(fws, sizeof fws);
        refuse(r, "unknown framework '%s' (known: %s)", fw, fws);
        return;
    }
    if (dup) {
        refuse(r, "duplicate of %s", dup->e.path);
        return;
    }
    lt_dlhandle h = lt_dlopenadvise(path, load_advise);
    if (!h) {
        const char *err = lt_dlerror();
        /* libltdl reports the last of its attempts (often "file not
         * found" for a file that exists but is no valid shared object):
         * ask the dynamic loader itself for the real reason. */
        char why[512] = "";
        void *d = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        const char *e2 = d ? NULL : dlerror();
        if (e2) snprintf(why, sizeof why, "%s", e2);
        if (d) dlclose(d);
        refuse(r, "cannot load: %s", why[0] ? why : err ? err : "unknown error");
        return;
    }
    char sym[160];
    snprintf(sym, sizeof sym, "kumi_%s_%s_component", fw, name);
    const struct kumi_component *c = lt_dlsym(h, sym);
    if (!c) {
        refuse(r, "symbol %s not found (a component exports exactly that symbol)", sym);
        lt_dlclose(h);
        return;
    }
    if (check_component(r, c, fw, name) != 0) {
        lt_dlclose(h);
        return;
    }
    /* Components may leave threads or handlers behind: never unmap them. */
    lt_dlmakeresident(h);
    r->e.handle = h;
    kumi_log(2, "registry: loaded %s/%s from %s", fw, name, path);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        kumi_log(2, "registry: cannot read folder %s", dir);
        return;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 9 || strncmp(de->d_name, "kumi_", 5) || strcmp(de->d_name + l - 3, ".so")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        load_file(dir, names[i]);
        free(names[i]);
    }
    free(names);
}

static void load_all(void)
{
    if (!ltdl_up) {
        if (lt_dlinit() != 0) {
            kumi_warn("registry: lt_dlinit failed: %s", lt_dlerror());
            return;
        }
        lt_dladvise_init(&load_advise);
        lt_dladvise_local(&load_advise);
        ltdl_up = 1;
    }
    const char *nopkg = getenv("KUMI_INTERNAL_NO_PKGLIBDIR");
    if (!nopkg || strcmp(nopkg, "1") != 0) scan_dir(KUMI_PKGLIBDIR);
    const char *cp = getenv("KUMI_COMPONENT_PATH");
    if (cp && *cp) {
        char *copy = strdup(cp), *save = NULL;
        for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save))
            if (*dir) scan_dir(dir);
        free(copy);
    }
}
#endif

/* Framework order, then name, then discovery order. */
static int cmp_entry(const void *a, const void *b)
{
    const struct reg_entry *x = *(struct reg_entry *const *)a, *y = *(struct reg_entry *const *)b;
    int fx = fw_index(x->e.framework), fy = fw_index(y->e.framework);
    if (fx < 0) fx = NFW;
    if (fy < 0) fy = NFW;
    if (fx != fy) return fx - fy;
    int c = strcmp(x->e.framework, y->e.framework);
    if (c) return c;
    c = strcmp(x->e.name, y->e.name);
    if (c) return c;
    return x->seq - y->seq;
}

static void register_params(void)
{
    for (int i = 0; i < nentries; i++) {
        struct reg_entry *r = entries[i];
        if (r->e.status == KUMI_COMP_REFUSED) continue;
        const struct kumi_component *c = r->e.comp;
        char help[256];
        snprintf(help, sizeof help, "Priority of %s/%s (higher is preferred)", c->framework, c->name);
        kumi_param_register_int(c->framework, c->name, "priority", c->priority, help, KUMI_LEVEL_TUNER,
                                &r->e.priority);
        if (c->register_params) c->register_params();
    }
}

/* "self, tcp": the accepted components of framework fw. */
static void comp_list(int fwi, char *out, size_t len)
{
    out[0] = '\0';
    int k = 0;
    for (int i = 0; i < nentries; i++) {
        struct reg_entry *r = entries[i];
        if (r->e.status == KUMI_COMP_REFUSED || fw_index(r->e.framework) != fwi) continue;
        size_t l = strlen(out);
        snprintf(out + l, len - l, "%s%s", k++ ? ", " : "", r->e.name);
    }
    if (!k) snprintf(out, len, "none");
}

static int sel_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sel_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, sizeof errmsg, fmt, ap);
    va_end(ap);
    return kumi_error(MPI_ERR_OTHER, "%s", errmsg);
}

static void trim(char **s)
{
    char *b = *s;
    while (*b == ' ' || *b == '\t') b++;
    char *e = b + strlen(b);
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n')) e--;
    *e = '\0';
    *s = b;
}

/* MPI_COMPONENTS="p2p=shmem,tcp;coll=^kacc" */
static int parse_selection(const char *spec)
{
    char *copy = strdup(spec), *save = NULL;
    if (!copy) return kumi_error(MPI_ERR_NO_MEM, "MPI_COMPONENTS: out of memory");
    int rc = MPI_SUCCESS;
    for (char *item = strtok_r(copy, ";", &save); item && rc == MPI_SUCCESS; item = strtok_r(NULL, ";", &save)) {
        trim(&item);
        if (!*item) continue;
        char *eq = strchr(item, '=');
        char fws[256];
        fw_list(fws, sizeof fws);
        if (!eq) {
            rc = sel_error("MPI_COMPONENTS: '%s' is not framework=list (e.g. \"p2p=self,tcp;coll=^tuned\")", item);
            break;
        }
        *eq = '\0';
        char *fw = item, *list = eq + 1;
        trim(&fw);
        trim(&list);
        int fwi = fw_index(fw);
        if (!*fw) {
            rc = sel_error("MPI_COMPONENTS: '=%s' has no framework name before '=' (frameworks: %s)", list, fws);
            break;
        }
        if (fwi < 0) {
            rc = sel_error("MPI_COMPONENTS: unknown framework '%s' (frameworks: %s)", fw, fws);
            break;
        }
        struct fw_sel *s = &selection[fwi];
        if (s->mode != SEL_ALL) {
            rc = sel_error("MPI_COMPONENTS: framework %s is given twice", fw);
            break;
        }
        enum sel_mode mode = SEL_ONLY;
        if (*list == '^') {
            mode = SEL_EXCEPT;
            list++;
            trim(&list);
        }
        if (!*list) {
            rc = sel_error("MPI_COMPONENTS: empty component list for framework %s", fw);
            break;
        }
        char *save2 = NULL;
        for (char *nm = strtok_r(list, ",", &save2); nm; nm = strtok_r(NULL, ",", &save2)) {
            trim(&nm);
            if (!*nm) continue;
            char avail[1024];
            comp_list(fwi, avail, sizeof avail);
            if (*nm == '^') {
                rc = sel_error("MPI_COMPONENTS: '^' must come first in the list of %s (it excludes the whole "
                               "list), found '%s'", fw, nm);
                break;
            }
            if (!find_accepted(fw, nm)) {
                struct reg_entry *bad = NULL;
                for (int i = 0; i < nentries; i++)
                    if (!strcmp(entries[i]->e.framework, fw) && !strcmp(entries[i]->e.name, nm)) bad = entries[i];
                if (bad)
                    rc = sel_error("MPI_COMPONENTS: component '%s' in framework %s cannot be used: %s refused: %s "
                                   "(available: %s)", nm, fw, bad->e.path, bad->e.reason, avail);
                else
                    rc = sel_error("MPI_COMPONENTS: unknown component '%s' in framework %s (available: %s)", nm,
                                   fw, avail);
                break;
            }
            char **nn = realloc(s->names, (s->n + 1) * sizeof *nn);
            if (!nn) {
                rc = kumi_error(MPI_ERR_NO_MEM, "MPI_COMPONENTS: out of memory");
                break;
            }
            s->names = nn;
            s->names[s->n++] = strdup(nm);
        }
        if (rc == MPI_SUCCESS && s->n == 0)
            rc = sel_error("MPI_COMPONENTS: empty component list for framework %s", fw);
        if (rc == MPI_SUCCESS) s->mode = mode;
    }
    free(copy);
    return rc;
}

static int sel_position(int fwi, const char *name)
{
    for (int i = 0; i < selection[fwi].n; i++)
        if (!strcmp(selection[fwi].names[i], name)) return i;
    return -1;
}

static void apply_selection(void)
{
    for (int i = 0; i < nentries; i++) {
        struct reg_entry *r = entries[i];
        if (r->e.status != KUMI_COMP_FOUND) continue;
        int fwi = fw_index(r->e.framework);
        int pos = sel_position(fwi, r->e.name);
        if ((selection[fwi].mode == SEL_ONLY && pos < 0) || (selection[fwi].mode == SEL_EXCEPT && pos >= 0)) {
            r->e.status = KUMI_COMP_EXCLUDED;
            snprintf(r->e.reason, sizeof r->e.reason, "excluded by MPI_COMPONENTS");
        }
    }
}

static void open_components(int fwi)   /* -1: every framework's */
{
    for (int i = 0; i < nentries; i++) {
        struct reg_entry *r = entries[i];
        if (r->e.status != KUMI_COMP_FOUND || (fwi >= 0 && fw_index(r->e.framework) != fwi)) continue;
        const struct kumi_component *c = r->e.comp;
        char why[256] = "";
        int rc = c->open ? c->open(why, sizeof why) : KUMI_OK;
        if (rc == KUMI_OK) {
            r->e.status = KUMI_COMP_AVAILABLE;
            r->opened = 1;
            why[sizeof why - 1] = '\0';
            snprintf(r->e.reason, sizeof r->e.reason, "%s", why);          /* a note, or "" */
            kumi_log(2, "registry: %s/%s available (priority %lld)", r->e.framework, r->e.name, r->e.priority);
        } else {
            why[sizeof why - 1] = '\0';
            r->e.status = KUMI_COMP_UNAVAILABLE;
            snprintf(r->e.reason, sizeof r->e.reason, "%s", why[0] ? why : "open() declined without a reason");
            kumi_log(1, "registry: %s/%s unavailable: %s", r->e.framework, r->e.name, r->e.reason);
        }
    }
}

KUMI_EXPORT int kumi_component_named(const char *framework, const char *name)
{
    int fwi = framework && name ? fw_index(framework) : -1;
    return fwi >= 0 && selection[fwi].mode == SEL_ONLY && sel_position(fwi, name) >= 0;
}

static int listing;
KUMI_EXPORT void kumi_registry_set_listing(void) { listing = 1; }
KUMI_EXPORT int kumi_registry_listing(void) { return listing; }

static void (*framework_params)(void);

void kumi_registry_set_params_hook(void (*fn)(void))
{
    framework_params = fn;
}

KUMI_EXPORT int kumi_registry_open(int do_open)
{
    if (!loaded) {
        loaded = 1;
        errmsg[0] = '\0';
        kumi_param_register_int("kumi", "base", "verbose", 0,
                                "Diagnostic output level (0: none; also KUMI_VERBOSE)", KUMI_LEVEL_USER,
                                &base_verbose);
        if (base_verbose > kumi_verbose_level) kumi_verbose_level = (int)base_verbose;
        if (framework_params) framework_params();
#ifdef KUMI_WANT_DLOPEN
        load_all();
#else
        add_linked_in();
#endif
        if (warned_refusal) setenv("KUMI_INTERNAL_REGISTRY_WARNED", "1", 1);
        qsort(entries, nentries, sizeof *entries, cmp_entry);
        register_params();
        for (int f = 0; f < NFW; f++) {
            avail_arrays[f] = calloc(nentries + 1, sizeof *avail_arrays[f]);
            if (!avail_arrays[f]) {
                open_rc = kumi_error(MPI_ERR_NO_MEM, "kumi_registry_open: out of memory");
                return open_rc;
            }
        }
        const char *spec = getenv("MPI_COMPONENTS");
        open_rc = spec ? parse_selection(spec) : MPI_SUCCESS;
        if (open_rc != MPI_SUCCESS) return open_rc;
        apply_selection();
    }
    if (open_rc != MPI_SUCCESS) return open_rc;
    if (do_open && !opened) {
        opened = 1;
        open_components(-1);
    }
    return MPI_SUCCESS;
}

KUMI_EXPORT int kumi_registry_open_framework(const char *framework)
{
    int rc = kumi_registry_open(0), fwi = fw_index(framework);
    if (rc != MPI_SUCCESS) return rc;
    if (fwi < 0) return kumi_error(MPI_ERR_ARG, "kumi_registry_open_framework: unknown framework '%s'",
                                   framework ? framework : "(null)");
    if (!opened) open_components(fwi);   /* a later kumi_registry_open(1) opens the others */
    return MPI_SUCCESS;
}

KUMI_EXPORT void kumi_registry_close(void)
{
    if (!loaded) return;
    for (int i = nentries - 1; i >= 0; i--) {
        struct reg_entry *r = entries[i];
        if (r->opened && r->e.comp && r->e.comp->close) r->e.comp->close();
#ifdef KUMI_WANT_DLOPEN
        if (r->e.handle) lt_dlclose(r->e.handle); /* resident: stays mapped */
#endif
        free(r);
    }
    free(entries);
    entries = NULL;
    nentries = capentries = 0;
    for (int f = 0; f < NFW; f++) {
        for (int k = 0; k < selection[f].n; k++) free(selection[f].names[k]);
        free(selection[f].names);
        selection[f].names = NULL;
        selection[f].n = 0;
        selection[f].mode = SEL_ALL;
        free(avail_arrays[f]);
        avail_arrays[f] = NULL;
    }
#ifdef KUMI_WANT_DLOPEN
    if (ltdl_up) {
        lt_dladvise_destroy(&load_advise);
        lt_dlexit();
        ltdl_up = 0;
    }
#endif
    loaded = opened = 0;
    open_rc = MPI_SUCCESS;
}

KUMI_EXPORT int kumi_registry_entries(struct kumi_comp_entry ***out)
{
    if (out) *out = (struct kumi_comp_entry **)entries; /* struct reg_entry begins with its entry */
    return nentries;
}

static int avail_fwi;
static int cmp_pref(const void *a, const void *b)
{
    const struct kumi_comp_entry *x = *(struct kumi_comp_entry *const *)a, *y = *(struct kumi_comp_entry *const *)b;
    if (selection[avail_fwi].mode == SEL_ONLY)
        return sel_position(avail_fwi, x->name) - sel_position(avail_fwi, y->name);
    if (x->priority != y->priority) return x->priority > y->priority ? -1 : 1;
    return strcmp(x->name, y->name);
}

KUMI_EXPORT struct kumi_comp_entry **kumi_registry_available(const char *framework, int *n)
{
    static struct kumi_comp_entry *none[1];
    int fwi = fw_index(framework);
    if (n) *n = 0;
    if (fwi < 0 || !avail_arrays[fwi]) return none;
    struct kumi_comp_entry **arr = avail_arrays[fwi];
    int k = 0;
    for (int i = 0; i < nentries; i++) {
        struct kumi_comp_entry *e = &entries[i]->e;
        if (fw_index(e->framework) != fwi) continue;
        if (e->status == KUMI_COMP_AVAILABLE || e->status == KUMI_COMP_SELECTED) arr[k++] = e;
    }
    arr[k] = NULL;
    avail_fwi = fwi;
    qsort(arr, k, sizeof *arr, cmp_pref);
    if (n) *n = k;
    return arr;
}

KUMI_EXPORT const char *kumi_registry_error(void)
{
    return errmsg;
}

KUMI_EXPORT int kumi_registry_contract(const char *framework, unsigned *major, unsigned *minor)
{
    int fwi = fw_index(framework);
    if (fwi < 0) return -1;
    if (major) *major = contracts[fwi].major;
    if (minor) *minor = contracts[fwi].minor;
    return 0;
}
