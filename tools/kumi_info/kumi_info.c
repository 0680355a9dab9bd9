/* kumi_info: what this Kumi installation has: version, folders, every
 * framework (with the version of its component contract) and component found
 * (version, the contract it was built against, path, status, description),
 * the MPI ABIs it runs programs of (the native standard ABI; the Open MPI
 * and MPICH shims that are installed, mpiexec --abi), and, with --param, their parameters (value, source, type, level, help).
 *
 *   kumi_info [--parsable] [--all] [--param FW COMP|all] [--level N] [--help]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "registry/registry.h"
#include "abi.h"      /* tools/mpiexec: the ABIs, where their shims are */
#include "info_mpit.h"

#ifndef KUMI_PKGLIBDIR
#define KUMI_PKGLIBDIR "(unknown)"
#endif

static int parsable;

static const char *status_name(enum kumi_comp_status s)
{
    switch (s) {
    case KUMI_COMP_FOUND: return "found";
    case KUMI_COMP_AVAILABLE: return "available";
    case KUMI_COMP_SELECTED: return "selected";
    case KUMI_COMP_UNAVAILABLE: return "unavailable";
    case KUMI_COMP_EXCLUDED: return "excluded";
    case KUMI_COMP_REFUSED: return "refused";
    }
    return "?";
}

static const char *source_name(enum kumi_param_source s)
{
    switch (s) {
    case KUMI_PARAM_SRC_DEFAULT: return "default";
    case KUMI_PARAM_SRC_FILE: return "file";
    case KUMI_PARAM_SRC_ENV: return "env";
    case KUMI_PARAM_SRC_RUNTIME: return "run time";
    }
    return "?";
}

static const char *level_name(int level)
{
    return level <= 3 ? "user" : level <= 6 ? "tuner" : "developer";
}

/* One line for parsable output: no newlines inside a value. */
static void kv(const char *prefix, const char *key, const char *value)
{
    printf("%s:%s:", prefix, key);
    for (const char *p = value ? value : ""; *p; p++) putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
    putchar('\n');
}

static void label(const char *l, const char *value)
{
    printf("%25s: %s\n", l, value && *value ? value : "(not set)");
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: kumi_info [options]\n"
            "Lists Kumi's version, folders, and every framework and component found\n"
            "(version, contract, path, status, description).\n"
            "\n"
            "  --param FW COMP   list the parameters of component COMP of framework FW\n"
            "                    (either may be 'all'; FW 'kumi' holds global parameters)\n"
            "  --all             components and every parameter\n"
            "  --mpit            the MPI_T performance variables and categories (the control\n"
            "                    variables are the parameters, under the same names)\n"
            "  --level N         only parameters of level <= N (1-3 user, 4-6 tuner, 7-9 developer)\n"
            "  --parsable, -p    stable key:value lines for scripts (includes all parameters\n"
            "                    unless --param narrows them)\n"
            "  --help, -h        this text\n"
            "\n"
            "Environment: KUMI_COMPONENT_PATH (more component folders, ':' separated),\n"
            "KUMI_ABI_DIR (the folder of the ABI shims instead of <pkglibdir>/abi),\n"
            "MPI_COMPONENTS (e.g. \"p2p=self,tcp;coll=^tuned\"), KUMI_<PARAMETER> (parameter values).\n");
}

/* "1.2": the contract version of framework fw that this library has. */
static void contract_version(const char *fw, char *out, size_t len)
{
    unsigned major = 0, minor = 0;
    if (kumi_registry_contract(fw, &major, &minor) == 0)
        snprintf(out, len, "%u.%u", major, minor);
    else
        snprintf(out, len, "?");
}

static void print_header(void)
{
    const char *cp = getenv("KUMI_COMPONENT_PATH");
    const char *sel = getenv("MPI_COMPONENTS");
    char files[8400] = "";
    for (int i = 0; i < 2; i++) {
        const char *f = kumi_param_file_path(i);
        if (!f) continue;
        size_t l = strlen(files);
        snprintf(files + l, sizeof files - l, "%s%s", l ? (parsable ? ":" : ", ") : "", f);
    }
    char abi[16];
    snprintf(abi, sizeof abi, "%d", KUMI_COMPONENT_ABI_VERSION);
    if (parsable) {
        kv("version", "kumi", KUMI_VERSION_STRING);
        kv("version", "component_abi", abi);
        kv("path", "pkglibdir", KUMI_PKGLIBDIR);
        kv("path", "component_path", cp);
        kv("path", "param_files", files);
        kv("env", "MPI_COMPONENTS", sel);
        for (int f = 0; kumi_frameworks[f]; f++) {
            char pfx[96], v[32];
            snprintf(pfx, sizeof pfx, "framework:%s", kumi_frameworks[f]);
            contract_version(kumi_frameworks[f], v, sizeof v);
            kv(pfx, "contract", v);
        }
        return;
    }
    label("Package", "Kumi MPI " KUMI_VERSION_STRING);
    label("Kumi version", KUMI_VERSION_STRING);
    label("Component ABI version", abi);
    label("Components (pkglibdir)", KUMI_PKGLIBDIR);
    label("KUMI_COMPONENT_PATH", cp);
    label("MPI_COMPONENTS", sel);
    label("Parameter files", files);
    char fws[512] = "";
    for (int f = 0; kumi_frameworks[f]; f++) {
        char v[32];
        contract_version(kumi_frameworks[f], v, sizeof v);
        size_t l = strlen(fws);
        snprintf(fws + l, sizeof fws - l, "%s%s (contract v%s)", f ? ", " : "", kumi_frameworks[f], v);
    }
    label("Frameworks", fws);
}

/* The ABIs: standard (native), and each foreign one whose shim is in the
 * abi dir (<pkglibdir>/abi or $KUMI_ABI_DIR; mpiexec uses the same). */
static void print_abis(void)
{
    const char *dir = mx_abi_dir();
    int maj = 0, min = 0;
    MPI_Abi_get_version(&maj, &min);
    if (parsable) kv("path", "abi_dir", dir);
    else label("ABI shims (KUMI_ABI_DIR)", dir);
    for (int i = 0; i < MX_NABIS; i++) {
        const struct mx_abi_desc *d = &mx_abis[i];
        char sub[4200], libs[2048] = "", pfx[64], buf[8400];
        snprintf(sub, sizeof sub, "%s/%s", dir, d->name);
        int have_main = 0;
        if (d->abi == MX_ABI_STANDARD) snprintf(libs, sizeof libs, "libmpi.so.0");
        for (int k = 0; d->libs[k]; k++) {
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", sub, d->libs[k]);
            if (access(p, F_OK) != 0) continue;
            if (k == 0) have_main = 1;
            size_t l = strlen(libs);
            snprintf(libs + l, sizeof libs - l, "%s%s", l ? (parsable ? "," : ", ") : "", d->libs[k]);
        }
        snprintf(pfx, sizeof pfx, "abi:%s", d->name);
        if (d->abi == MX_ABI_STANDARD) {
            char ver[32];
            snprintf(ver, sizeof ver, "%d.%d", maj, min);
            if (parsable) {
                kv(pfx, "status", "native");
                kv(pfx, "description", "MPI 5.0 standard ABI");
                kv(pfx, "version", ver);
                kv(pfx, "libraries", libs);
                if (have_main) kv(pfx, "path", sub);
                continue;
            }
            snprintf(buf, sizeof buf, "standard (MPI 5.0 ABI %s, native: %s%s%s)", ver, libs,
                     have_main ? " at " : "", have_main ? sub : "");
            label("ABI", buf);
            continue;
        }
        if (parsable) {
            kv(pfx, "status", have_main ? "available" : "not built");
            kv(pfx, "description", d->what);
            kv(pfx, "path", sub);
            kv(pfx, "libraries", libs);
            continue;
        }
        if (have_main)
            snprintf(buf, sizeof buf, "%s (%s, %s) at %s", d->name, d->what, libs, sub);
        else
            snprintf(buf, sizeof buf, "%s (%s, %s): not built (%s/%s missing)", d->name, d->what, d->main_lib,
                     sub, d->main_lib);
        label("ABI", buf);
    }
    /* processes of both foreign ABIs: both shims and the GOT swap agent (mpiexec sets them up) */
    char agent[4200], o[4200], m[4200], buf[8400];
    snprintf(agent, sizeof agent, "%s/%s", dir, MX_ABI_MIX_AGENT);
    snprintf(o, sizeof o, "%s/ompi/libmpi.so.40", dir);
    snprintf(m, sizeof m, "%s/mpich/libmpich.so.12", dir);
    int have = access(agent, F_OK) == 0, both = have && access(o, F_OK) == 0 && access(m, F_OK) == 0;
    if (parsable) {
        kv("abi:ompi+mpich", "status", both ? "available" : "not built");
        kv("abi:ompi+mpich", "description", "Open MPI 4.x and MPICH 4.x in one process (GOT swap)");
        kv("abi:ompi+mpich", "path", agent);
        return;
    }
    if (both)
        snprintf(buf, sizeof buf, "ompi+mpich (Open MPI and MPICH in one process: both shims, %s) at %s",
                 MX_ABI_MIX_AGENT, dir);
    else
        snprintf(buf, sizeof buf, "ompi+mpich (Open MPI and MPICH in one process): not built (%s missing)",
                 have ? "a shim" : agent);
    label("ABI", buf);
}

static void print_entry(const struct kumi_comp_entry *e)
{
    char ver[64] = "", con[32] = "", buf[512];
    if (e->comp) {
        /* the contract the component was built against: its table's header */
        const struct kumi_ops_hdr *h = e->comp->ops;
        snprintf(ver, sizeof ver, "%d.%d.%d", e->comp->version[0], e->comp->version[1], e->comp->version[2]);
        snprintf(con, sizeof con, "%u.%u", h->major, h->minor);
    }
    if (parsable) {
        char pfx[160];
        snprintf(pfx, sizeof pfx, "component:%s:%s", e->framework, e->name);
        if (e->comp) kv(pfx, "version", ver);
        if (e->comp) kv(pfx, "contract", con);
        kv(pfx, "status", status_name(e->status));
        if (e->reason[0])
            kv(pfx, e->status == KUMI_COMP_AVAILABLE || e->status == KUMI_COMP_SELECTED ? "note" : "reason",
               e->reason);
        kv(pfx, "path", e->path);
        if (e->comp) {
            snprintf(buf, sizeof buf, "%lld", e->priority);
            kv(pfx, "priority", buf);
            kv(pfx, "description", e->comp->description);
        }
        return;
    }
    char lbl[96];
    snprintf(lbl, sizeof lbl, "Kumi %s", e->framework);
    if (e->comp)
        snprintf(buf, sizeof buf, "%s (v%s, contract v%s, priority %lld)", e->name, ver, con, e->priority);
    else
        snprintf(buf, sizeof buf, "%s", e->name);
    label(lbl, buf);
    if (!e->reason[0] || e->status == KUMI_COMP_FOUND)
        snprintf(buf, sizeof buf, "%s", status_name(e->status));
    else if (e->status == KUMI_COMP_AVAILABLE || e->status == KUMI_COMP_SELECTED)
        snprintf(buf, sizeof buf, "%s (%s)", status_name(e->status), e->reason);
    else
        snprintf(buf, sizeof buf, "%s: %s", status_name(e->status), e->reason);
    printf("%25s  status: %s\n", "", buf);
    printf("%25s  path: %s\n", "", e->path);
    if (e->comp && e->comp->description) printf("%25s  description: %s\n", "", e->comp->description);
}

static void print_components(void)
{
    struct kumi_comp_entry **ents;
    int n = kumi_registry_entries(&ents);
    for (int f = 0; kumi_frameworks[f]; f++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (!strcmp(ents[i]->framework, kumi_frameworks[f])) {
                print_entry(ents[i]);
                k++;
            }
        if (!k && !parsable) {
            char lbl[96];
            snprintf(lbl, sizeof lbl, "Kumi %s", kumi_frameworks[f]);
            label(lbl, "(no components)");
        }
    }
    /* files refused before their framework was known */
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int f = 0; kumi_frameworks[f]; f++)
            if (!strcmp(ents[i]->framework, kumi_frameworks[f])) known = 1;
        if (!known) print_entry(ents[i]);
    }
}

static int param_matches(const struct kumi_param_info *p, const char *fw, const char *comp, int maxlevel)
{
    if (p->level > maxlevel) return 0;
    if (strcmp(fw, "all") && strcmp(fw, p->framework)) return 0;
    if (strcmp(comp, "all") && strcmp(comp, p->component)) return 0;
    return 1;
}

static void print_param(const struct kumi_param_info *p)
{
    char env[256], lvl[16];
    kumi_param_envname(p->fullname, env, sizeof env);
    snprintf(lvl, sizeof lvl, "%d", p->level);
    if (parsable) {
        char pfx[256];
        snprintf(pfx, sizeof pfx, "param:%s", p->fullname);
        kv(pfx, "value", p->value);
        kv(pfx, "source", source_name(p->source));
        if (p->source != KUMI_PARAM_SRC_DEFAULT) kv(pfx, "source_detail", p->source_detail);
        kv(pfx, "type", kumi_param_type_name(p->type));
        kv(pfx, "level", lvl);
        kv(pfx, "default", p->defval);
        kv(pfx, "envvar", env);
        kv(pfx, "framework", p->framework);
        kv(pfx, "component", p->component);
        kv(pfx, "help", p->help);
        return;
    }
    char lbl[160], src[4200];
    snprintf(lbl, sizeof lbl, "%s %s", p->framework, p->component[0] ? p->component : "-");
    if (p->source == KUMI_PARAM_SRC_DEFAULT)
        snprintf(src, sizeof src, "default");
    else
        snprintf(src, sizeof src, "%s %s", source_name(p->source), p->source_detail);
    printf("%25s: parameter \"%s\" (current value: \"%s\", source: %s, level: %d %s, type: %s)\n", lbl,
           p->fullname, p->value, src, p->level, level_name(p->level), kumi_param_type_name(p->type));
    if (p->help && *p->help) printf("%25s  %s\n", "", p->help);
    printf("%25s  (environment %s, default \"%s\")\n", "", env, p->defval);
}

/* Is FW/COMP something that exists (a component found, or a parameter owner)? */
static int param_target_exists(const char *fw, const char *comp)
{
    int nfw_match = !strcmp(fw, "all");
    for (int f = 0; kumi_frameworks[f]; f++)
        if (!strcmp(fw, kumi_frameworks[f])) nfw_match = 1;
    int np = kumi_param_count();
    struct kumi_param_info info;
    for (int i = 0; i < np; i++) {
        if (kumi_param_get_info(i, &info) != MPI_SUCCESS) continue;
        if (!strcmp(fw, "all") || !strcmp(fw, info.framework)) {
            nfw_match = 1;
            if (!strcmp(comp, "all") || !strcmp(comp, info.component)) return 1;
        }
    }
    if (!nfw_match) {
        fprintf(stderr, "kumi_info: unknown framework '%s' (frameworks: kumi", fw);
        for (int f = 0; kumi_frameworks[f]; f++) fprintf(stderr, ", %s", kumi_frameworks[f]);
        fprintf(stderr, ")\n");
        return 0;
    }
    if (!strcmp(comp, "all")) return 1; /* known framework without parameters */
    fprintf(stderr, "kumi_info: no component '%s' in framework %s (found:", comp, fw);
    struct kumi_comp_entry **ents;
    int n = kumi_registry_entries(&ents), k = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(ents[i]->framework, fw) && ents[i]->comp) fprintf(stderr, "%s %s", k++ ? "," : "", ents[i]->name);
    fprintf(stderr, "%s)\n", k ? "" : " none");
    return 0;
}

static int fw_rank(const char *fw)
{
    if (!strcmp(fw, "kumi")) return 0;
    for (int f = 0; kumi_frameworks[f]; f++)
        if (!strcmp(fw, kumi_frameworks[f])) return f + 1;
    return 100;
}

struct pinfo_sorted {
    struct kumi_param_info info;
    int seq;
};

static int cmp_param(const void *a, const void *b)
{
    const struct pinfo_sorted *x = a, *y = b;
    int c = fw_rank(x->info.framework) - fw_rank(y->info.framework);
    if (!c) c = strcmp(x->info.framework, y->info.framework);
    if (!c) c = strcmp(x->info.component, y->info.component);
    if (!c) c = x->seq - y->seq;
    return c;
}

static int print_params(const char *fw, const char *comp, int maxlevel)
{
    if (!param_target_exists(fw, comp)) return 1;
    int np = kumi_param_count(), k = 0;
    struct pinfo_sorted *ps = calloc(np + 1, sizeof *ps);
    if (!ps) return 1;
    for (int i = 0; i < np; i++)
        if (kumi_param_get_info(i, &ps[k].info) == MPI_SUCCESS && param_matches(&ps[k].info, fw, comp, maxlevel))
            ps[k].seq = i, k++;
    qsort(ps, k, sizeof *ps, cmp_param);
    for (int i = 0; i < k; i++) print_param(&ps[i].info);
    if (!k && !parsable) printf("%25s: (no parameters)\n", strcmp(fw, "all") ? fw : "all");
    free(ps);
    return 0;
}

int main(int argc, char **argv)
{
    const char *pfw = NULL, *pcomp = NULL;
    int all = 0, maxlevel = 9, mpit = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--parsable") || !strcmp(a, "-p") || !strcmp(a, "--parseable"))
            parsable = 1;
        else if (!strcmp(a, "--all") || !strcmp(a, "-a"))
            all = 1;
        else if (!strcmp(a, "--mpit"))
            mpit = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--param")) {
            if (i + 2 >= argc) {
                fprintf(stderr, "kumi_info: --param needs two arguments: FRAMEWORK COMPONENT (or 'all')\n");
                return 1;
            }
            pfw = argv[++i];
            pcomp = argv[++i];
        } else if (!strcmp(a, "--level")) {
            char *end;
            if (i + 1 >= argc || (maxlevel = (int)strtol(argv[i + 1], &end, 10), *end) || maxlevel < 1) {
                fprintf(stderr, "kumi_info: --level needs a number 1-9\n");
                return 1;
            }
            i++;
        } else {
            fprintf(stderr, "kumi_info: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        }
    }
    /* kumi_info lists refused files itself: no separate warnings about them. */
    setenv("KUMI_INTERNAL_REGISTRY_QUIET", "1", 1);
    kumi_registry_set_listing();
    int rc = kumi_registry_open(1);
    if (rc != MPI_SUCCESS) {
        const char *msg = kumi_registry_error();
        fprintf(stderr, "kumi_info: %s\n", msg && *msg ? msg : "cannot open the component registry");
        return 1;
    }
    kumi_param_warn_unknown();
    if (mpit && !pfw) {
        int mrc = kumi_info_mpit(parsable);
        kumi_registry_close();
        return mrc;
    }
    if (pfw) {
        int prc = print_params(pfw, pcomp, maxlevel);
        kumi_registry_close();
        return prc;
    }
    print_header();
    print_abis();
    print_components();
    if (parsable || all)
        print_params("all", "all", maxlevel);
    else
        printf("\n%d parameters: kumi_info --param all all lists them.\n", kumi_param_count());
    kumi_registry_close();
    return 0;
}
