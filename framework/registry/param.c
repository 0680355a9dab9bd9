/* Typed parameters <framework>_<component>_<name> (see kumi/param.h).
 *
 * Sources, lowest first: the default, $(sysconfdir)/kumi-params.conf,
 * ~/.kumi/params.conf, the environment (KUMI_<FULLNAME upper-cased>).  A
 * value that does not parse is ignored with one warning naming where it came
 * from, so the parameter keeps the value of the next lower source (normally
 * the default).  Parameters live as long as the process: their strings are
 * copies, so components may be unloaded without leaving dangling names. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry/registry.h"

#ifndef KUMI_SYSCONFDIR
#define KUMI_SYSCONFDIR "/etc"
#endif

extern char **environ;

union param_val {
    long long i;
    size_t z;
    int b;
    double d;
    char *s;
};

struct param {
    char *fullname, *fw, *comp, *name, *help;
    enum kumi_param_type type;
    int level;
    enum kumi_param_source source;
    char *source_detail;
    union param_val val, def;
    void *storage;              /* where the first registration keeps the value */
    int runtime;                /* may change while the library runs (kumi_param_set_runtime) */
};

struct file_entry {
    char *name;          /* lower-cased, as written in the file */
    char *value;
    const char *file;
    int line;
};

static pthread_mutex_t param_lock = PTHREAD_MUTEX_INITIALIZER;
static struct param *params;
static int nparams, capparams;

static struct file_entry *fentries;
static int nfentries, capfentries;
static int files_loaded;
static char file_paths[2][4096];

/* Runtime variables set by mpiexec / the rpim layer or read by tools: not parameters. */
static const char *const runtime_vars[] = {
    "KUMI_RANK", "KUMI_SIZE", "KUMI_JOBID", "KUMI_CONTROL", "KUMI_JOB_SECRET",
    "KUMI_RPIM", "KUMI_COMPONENT_PATH", "KUMI_VERBOSE", "KUMI_CC", "KUMI_CXX", "KUMI_FC",
    "KUMI_INFO", /* exported by tests/run-tests.sh to every test */
    "KUMI_ABI", "KUMI_ABI_DIR", /* the ABI mpiexec chose (or is told), where the shims are */
    "KUMI_ABIMIX_VERBOSE",      /* libkumi_abimix.so (components/abi/gotswap/abimix.c) */
    "KUMI_SPAWNED", "KUMI_PARENT_JOBID", "KUMI_APPNUM", /* children of a spawn (kumi/rpim.h) */
    "KUMI_DPM_PARENT_PORT",     /* the port a spawned job connects to (MPI_Comm_spawn's glue) */
    NULL
};
static const char *const runtime_prefixes[] = { "KUMI_TEST_", "KUMI_BENCH_", "KUMI_INTERNAL_", NULL };

/* ------------------------------------------------------------------ helpers */

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) {
        fprintf(stderr, "kumi: out of memory\n");
        abort();
    }
    return d;
}

KUMI_EXPORT const char *kumi_param_type_name(enum kumi_param_type t)
{
    switch (t) {
    case KUMI_PARAM_INT: return "int";
    case KUMI_PARAM_SIZE: return "size";
    case KUMI_PARAM_BOOL: return "bool";
    case KUMI_PARAM_DOUBLE: return "double";
    case KUMI_PARAM_STRING: return "string";
    }
    return "?";
}

/* Warnings go to rank 0 of a job, to processes outside a job (mpiexec,
 * kumi_info, singletons), or everywhere when verbose. */
static int should_warn(void)
{
    const char *r = getenv("KUMI_RANK");
    return !r || !*r || strcmp(r, "0") == 0 || kumi_verbose_level > 0;
}

static void trim(char **b, char **e)
{
    while (*b < *e && isspace((unsigned char)**b)) (*b)++;
    while (*e > *b && isspace((unsigned char)(*e)[-1])) (*e)--;
}

KUMI_EXPORT void kumi_param_envname(const char *fullname, char *out, size_t outlen)
{
    if (!out || outlen == 0) return;
    size_t k = 0;
    /* framework "kumi" (global parameters): kumi_base_verbose -> KUMI_BASE_VERBOSE */
    const char *pre = fullname && strncmp(fullname, "kumi_", 5) == 0 ? "" : "KUMI_";
    for (; *pre && k + 1 < outlen; pre++) out[k++] = *pre;
    for (const char *p = fullname ? fullname : ""; *p && k + 1 < outlen; p++)
        out[k++] = (char)toupper((unsigned char)*p);
    out[k] = '\0';
}

/* Environment names of a parameter: [0] the regular one, then aliases. */
static int param_envnames(const struct param *p, char names[3][256])
{
    int n = 0;
    kumi_param_envname(p->fullname, names[n++], sizeof names[0]);
    if (strcmp(p->fullname, "kumi_base_verbose") == 0) snprintf(names[n++], sizeof names[0], "KUMI_VERBOSE");
    return n;
}

/* ------------------------------------------------------------ value parsing */

static int parse_value(enum kumi_param_type t, const char *text, union param_val *out)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", text ? text : "");
    char *b = buf, *e = buf + strlen(buf);
    if (t != KUMI_PARAM_STRING) trim(&b, &e);
    *e = '\0';
    char *end;
    switch (t) {
    case KUMI_PARAM_INT: {
        if (!*b) return -1;
        errno = 0;
        int hex = (b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) ||
                  ((b[0] == '-' || b[0] == '+') && b[1] == '0' && (b[2] == 'x' || b[2] == 'X'));
        long long v = strtoll(b, &end, hex ? 16 : 10);
        if (errno || end == b || *end) return -1;
        out->i = v;
        return 0;
    }
    case KUMI_PARAM_SIZE: {
        if (!*b || *b == '-') return -1;
        errno = 0;
        int hex = b[0] == '0' && (b[1] == 'x' || b[1] == 'X');
        unsigned long long v = strtoull(b, &end, hex ? 16 : 10);
        if (errno || end == b) return -1;
        unsigned long long mul = 1;
        if (*end) {
            switch (tolower((unsigned char)*end)) {
            case 'k': mul = 1ULL << 10; break;
            case 'm': mul = 1ULL << 20; break;
            case 'g': mul = 1ULL << 30; break;
            case 't': mul = 1ULL << 40; break;
            default: return -1;
            }
            end++;
            /* accept k, kb, kib (any case) */
            if (strcasecmp(end, "") != 0 && strcasecmp(end, "b") != 0 && strcasecmp(end, "ib") != 0)
                return -1;
        }
        if (v > (unsigned long long)SIZE_MAX / mul) return -1;
        out->z = (size_t)(v * mul);
        return 0;
    }
    case KUMI_PARAM_BOOL:
        if (!strcmp(b, "1") || !strcasecmp(b, "yes") || !strcasecmp(b, "true") || !strcasecmp(b, "on")) {
            out->b = 1;
            return 0;
        }
        if (!strcmp(b, "0") || !strcasecmp(b, "no") || !strcasecmp(b, "false") || !strcasecmp(b, "off")) {
            out->b = 0;
            return 0;
        }
        return -1;
    case KUMI_PARAM_DOUBLE: {
        if (!*b) return -1;
        errno = 0;
        double d = strtod(b, &end);
        if (errno || end == b || *end || !isfinite(d)) return -1;
        out->d = d;
        return 0;
    }
    case KUMI_PARAM_STRING:
        out->s = xstrdup(b);
        return 0;
    }
    return -1;
}

static void value_text(enum kumi_param_type t, const union param_val *v, char *out, size_t len)
{
    switch (t) {
    case KUMI_PARAM_INT: snprintf(out, len, "%lld", v->i); break;
    case KUMI_PARAM_SIZE: snprintf(out, len, "%zu", v->z); break;
    case KUMI_PARAM_BOOL: snprintf(out, len, "%s", v->b ? "true" : "false"); break;
    case KUMI_PARAM_DOUBLE: snprintf(out, len, "%g", v->d); break;
    case KUMI_PARAM_STRING: snprintf(out, len, "%s", v->s ? v->s : ""); break;
    }
}

static void store(const struct param *p, void *storage)
{
    if (!storage) return;
    switch (p->type) {
    case KUMI_PARAM_INT: *(long long *)storage = p->val.i; break;
    case KUMI_PARAM_SIZE: *(size_t *)storage = p->val.z; break;
    case KUMI_PARAM_BOOL: *(int *)storage = p->val.b; break;
    case KUMI_PARAM_DOUBLE: *(double *)storage = p->val.d; break;
    case KUMI_PARAM_STRING: *(const char **)storage = p->val.s; break;
    }
}

/* ------------------------------------------------------------------ files */

static void load_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return;
    const char *fname = path;
    char line[2048];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *b = line, *e = line + strlen(line);
        trim(&b, &e);
        *e = '\0';
        if (!*b || *b == '#') continue;
        char *eq = strchr(b, '=');
        if (!eq) {
            if (should_warn())
                kumi_warn("%s:%d: expected 'name = value', ignoring \"%s\"", fname, lineno, b);
            continue;
        }
        char *nb = b, *ne = eq;
        trim(&nb, &ne);
        *ne = '\0';
        char *vb = eq + 1, *ve = e;
        /* an inline comment starts at a '#' preceded by white space */
        for (char *q = vb; q < ve; q++)
            if (*q == '#' && q > vb && isspace((unsigned char)q[-1])) {
                ve = q;
                break;
            }
        trim(&vb, &ve);
        if (ve - vb >= 2 && ((*vb == '"' && ve[-1] == '"') || (*vb == '\'' && ve[-1] == '\''))) {
            vb++;
            ve--;
        }
        *ve = '\0';
        if (!*nb) {
            if (should_warn()) kumi_warn("%s:%d: missing parameter name", fname, lineno);
            continue;
        }
        if (nfentries == capfentries) {
            capfentries = capfentries ? 2 * capfentries : 16;
            struct file_entry *n = realloc(fentries, capfentries * sizeof *n);
            if (!n) break;
            fentries = n;
        }
        struct file_entry *fe = &fentries[nfentries++];
        fe->name = xstrdup(nb);
        for (char *q = fe->name; *q; q++) *q = (char)tolower((unsigned char)*q);
        fe->value = xstrdup(vb);
        fe->file = fname;
        fe->line = lineno;
    }
    fclose(f);
}

static void load_files(void)
{
    if (files_loaded) return;
    files_loaded = 1;
    snprintf(file_paths[0], sizeof file_paths[0], "%s/kumi-params.conf", KUMI_SYSCONFDIR);
    const char *home = getenv("HOME");
    if (home && *home) snprintf(file_paths[1], sizeof file_paths[1], "%s/.kumi/params.conf", home);
    load_file(file_paths[0]);
    if (file_paths[1][0]) load_file(file_paths[1]);
}

KUMI_EXPORT const char *kumi_param_file_path(int i)
{
    pthread_mutex_lock(&param_lock);
    load_files();
    pthread_mutex_unlock(&param_lock);
    if (i < 0 || i > 1 || !file_paths[i][0]) return NULL;
    return file_paths[i];
}

/* Does a name written in a file (lower-cased) name parameter p? */
static int file_name_matches(const char *fname, const struct param *p)
{
    if (!strcasecmp(fname, p->fullname)) return 1;
    char names[3][256];
    int n = param_envnames(p, names);
    for (int i = 0; i < n; i++)
        if (!strcasecmp(fname, names[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------ registration */

static struct param *find_param(const char *fullname)
{
    for (int i = 0; i < nparams; i++)
        if (!strcmp(params[i].fullname, fullname)) return &params[i];
    return NULL;
}

static int param_register(const char *fw, const char *comp, const char *name, enum kumi_param_type type,
                          union param_val def, const char *help, int level, void *storage)
{
    if (!fw || !*fw || !name || !*name)
        return kumi_error(MPI_ERR_ARG, "kumi_param_register: framework and name are required");
    if (!comp) comp = "";
    char full[192];
    if (*comp)
        snprintf(full, sizeof full, "%s_%s_%s", fw, comp, name);
    else
        snprintf(full, sizeof full, "%s_%s", fw, name);

    pthread_mutex_lock(&param_lock);
    struct param *p = find_param(full);
    if (p) {
        int rc = MPI_SUCCESS;
        if (p->type != type)
            rc = kumi_error(MPI_ERR_ARG, "kumi_param_register: parameter %s registered again as %s (it is %s)",
                            full, kumi_param_type_name(type), kumi_param_type_name(p->type));
        else
            store(p, storage);
        if (!p->storage) p->storage = storage;
        pthread_mutex_unlock(&param_lock);
        return rc;
    }
    load_files();
    if (nparams == capparams) {
        int ncap = capparams ? 2 * capparams : 64;
        struct param *n = realloc(params, ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&param_lock);
            return kumi_error(MPI_ERR_NO_MEM, "kumi_param_register: out of memory registering %s", full);
        }
        params = n;
        capparams = ncap;
    }
    p = &params[nparams];
    memset(p, 0, sizeof *p);
    p->fullname = xstrdup(full);
    p->fw = xstrdup(fw);
    p->comp = xstrdup(comp);
    p->name = xstrdup(name);
    p->help = xstrdup(help);
    p->type = type;
    p->level = level;
    p->source = KUMI_PARAM_SRC_DEFAULT;
    p->source_detail = xstrdup("");
    p->storage = storage;
    if (type == KUMI_PARAM_STRING) def.s = def.s ? xstrdup(def.s) : NULL;
    p->def = def;
    p->val = def;
    if (type == KUMI_PARAM_STRING && def.s) p->val.s = xstrdup(def.s);
    nparams++;

    int rc = MPI_SUCCESS;
    char txt[1024];
    /* Files: the last line that names the parameter wins (user file after system file). */
    for (int i = nfentries - 1; i >= 0; i--) {
        if (!file_name_matches(fentries[i].name, p)) continue;
        union param_val v;
        if (parse_value(type, fentries[i].value, &v) == 0) {
            if (type == KUMI_PARAM_STRING) free(p->val.s);
            p->val = v;
            p->source = KUMI_PARAM_SRC_FILE;
            free(p->source_detail);
            p->source_detail = xstrdup(fentries[i].file);
        } else {
            value_text(type, &p->val, txt, sizeof txt);
            if (should_warn())
                kumi_warn("%s:%d: bad value '%s' for parameter %s (expected %s); keeping %s",
                          fentries[i].file, fentries[i].line, fentries[i].value, full, kumi_param_type_name(type), txt);
            rc = kumi_error(MPI_ERR_ARG, "%s:%d: bad value '%s' for parameter %s (expected %s)",
                            fentries[i].file, fentries[i].line, fentries[i].value, full, kumi_param_type_name(type));
        }
        break;
    }
    /* Environment: the regular name first, then the aliases. */
    char names[3][256];
    int nn = param_envnames(p, names);
    for (int k = 0; k < nn; k++) {
        const char *ev = getenv(names[k]);
        if (!ev) continue;
        union param_val v;
        if (parse_value(type, ev, &v) == 0) {
            if (type == KUMI_PARAM_STRING) free(p->val.s);
            p->val = v;
            p->source = KUMI_PARAM_SRC_ENV;
            free(p->source_detail);
            p->source_detail = xstrdup(names[k]);
        } else {
            value_text(type, &p->val, txt, sizeof txt);
            if (should_warn())
                kumi_warn("bad value '%s' in %s (parameter %s expects %s); keeping %s", ev, names[k], full,
                          kumi_param_type_name(type), txt);
            rc = kumi_error(MPI_ERR_ARG, "bad value '%s' in %s (parameter %s expects %s)", ev, names[k], full,
                            kumi_param_type_name(type));
        }
        break;
    }
    store(p, storage);
    value_text(type, &p->val, txt, sizeof txt);
    kumi_log(3, "param %s = %s (%s%s%s)", full, txt,
             p->source == KUMI_PARAM_SRC_ENV ? "env" : p->source == KUMI_PARAM_SRC_FILE ? "file" : "default",
             p->source_detail[0] ? " " : "", p->source_detail);
    pthread_mutex_unlock(&param_lock);
    return rc;
}

KUMI_EXPORT int kumi_param_register_int(const char *fw, const char *comp, const char *name, long long defval,
                                        const char *help, int level, long long *storage)
{
    union param_val d = { .i = defval };
    return param_register(fw, comp, name, KUMI_PARAM_INT, d, help, level, storage);
}

KUMI_EXPORT int kumi_param_register_size(const char *fw, const char *comp, const char *name, size_t defval,
                                         const char *help, int level, size_t *storage)
{
    union param_val d = { .z = defval };
    return param_register(fw, comp, name, KUMI_PARAM_SIZE, d, help, level, storage);
}

KUMI_EXPORT int kumi_param_register_bool(const char *fw, const char *comp, const char *name, int defval,
                                         const char *help, int level, int *storage)
{
    union param_val d = { .b = defval ? 1 : 0 };
    return param_register(fw, comp, name, KUMI_PARAM_BOOL, d, help, level, storage);
}

KUMI_EXPORT int kumi_param_register_double(const char *fw, const char *comp, const char *name, double defval,
                                           const char *help, int level, double *storage)
{
    union param_val d = { .d = defval };
    return param_register(fw, comp, name, KUMI_PARAM_DOUBLE, d, help, level, storage);
}

KUMI_EXPORT int kumi_param_register_string(const char *fw, const char *comp, const char *name,
                                           const char *defval, const char *help, int level,
                                           const char **storage)
{
    union param_val d = { .s = (char *)defval };
    return param_register(fw, comp, name, KUMI_PARAM_STRING, d, help, level, (void *)storage);
}

/* ---------------------------------------------------------------- queries */

KUMI_EXPORT int kumi_param_count(void)
{
    pthread_mutex_lock(&param_lock);
    int n = nparams;
    pthread_mutex_unlock(&param_lock);
    return n;
}

KUMI_EXPORT int kumi_param_get_info(int i, struct kumi_param_info *info)
{
    if (!info) return MPI_ERR_ARG;
    pthread_mutex_lock(&param_lock);
    if (i < 0 || i >= nparams) {
        pthread_mutex_unlock(&param_lock);
        return MPI_ERR_ARG;
    }
    const struct param *p = &params[i];
    memset(info, 0, sizeof *info);
    snprintf(info->fullname, sizeof info->fullname, "%s", p->fullname);
    info->framework = p->fw;
    info->component = p->comp;
    info->name = p->name;
    info->type = p->type;
    info->help = p->help;
    info->level = p->level;
    info->source = p->source;
    snprintf(info->source_detail, sizeof info->source_detail, "%s", p->source_detail);
    value_text(p->type, &p->val, info->value, sizeof info->value);
    value_text(p->type, &p->def, info->defval, sizeof info->defval);
    info->runtime = p->runtime && p->storage;
    pthread_mutex_unlock(&param_lock);
    return MPI_SUCCESS;
}

/* ------------------------------------------------- run-time access (MPI_T) */

KUMI_EXPORT int kumi_param_set_runtime(const char *fullname)
{
    pthread_mutex_lock(&param_lock);
    struct param *p = fullname ? find_param(fullname) : NULL;
    if (p) p->runtime = 1;
    pthread_mutex_unlock(&param_lock);
    return p ? MPI_SUCCESS : MPI_ERR_ARG;
}

KUMI_EXPORT int kumi_param_is_default(const char *fullname)
{
    pthread_mutex_lock(&param_lock);
    struct param *p = fullname ? find_param(fullname) : NULL;
    int d = p ? p->source == KUMI_PARAM_SRC_DEFAULT : -1;
    pthread_mutex_unlock(&param_lock);
    return d;
}

KUMI_EXPORT int kumi_param_index(const char *fullname)
{
    int k = -1;
    pthread_mutex_lock(&param_lock);
    for (int i = 0; fullname && i < nparams; i++)
        if (!strcmp(params[i].fullname, fullname)) { k = i; break; }
    pthread_mutex_unlock(&param_lock);
    return k;
}

KUMI_EXPORT int kumi_param_read(int i, void *buf, size_t len)
{
    pthread_mutex_lock(&param_lock);
    if (i < 0 || i >= nparams || !buf) {
        pthread_mutex_unlock(&param_lock);
        return MPI_ERR_ARG;
    }
    const struct param *p = &params[i];
    switch (p->type) {
    case KUMI_PARAM_INT: *(long long *)buf = p->val.i; break;
    case KUMI_PARAM_SIZE: *(size_t *)buf = p->val.z; break;
    case KUMI_PARAM_BOOL: *(int *)buf = p->val.b; break;
    case KUMI_PARAM_DOUBLE: *(double *)buf = p->val.d; break;
    case KUMI_PARAM_STRING:
        if (len) snprintf(buf, len, "%s", p->val.s ? p->val.s : "");
        break;
    }
    pthread_mutex_unlock(&param_lock);
    return MPI_SUCCESS;
}

KUMI_EXPORT int kumi_param_write(int i, const void *buf)
{
    pthread_mutex_lock(&param_lock);
    if (i < 0 || i >= nparams || !buf) {
        pthread_mutex_unlock(&param_lock);
        return MPI_ERR_ARG;
    }
    struct param *p = &params[i];
    if (!p->runtime || !p->storage) {
        pthread_mutex_unlock(&param_lock);
        return MPI_ERR_ACCESS;
    }
    switch (p->type) {
    case KUMI_PARAM_INT: p->val.i = *(const long long *)buf; break;
    case KUMI_PARAM_SIZE: p->val.z = *(const size_t *)buf; break;
    case KUMI_PARAM_BOOL: p->val.b = *(const int *)buf ? 1 : 0; break;
    case KUMI_PARAM_DOUBLE: p->val.d = *(const double *)buf; break;
    case KUMI_PARAM_STRING:
        /* the old string stays allocated: a component may still hold it */
        p->val.s = xstrdup(buf);
        break;
    }
    p->source = KUMI_PARAM_SRC_RUNTIME;
    free(p->source_detail);
    p->source_detail = xstrdup("MPI_T_cvar_write");
    store(p, p->storage);
    pthread_mutex_unlock(&param_lock);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------ unknown variables */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 250 || lb > 250) return (size_t)-1;
    size_t row[256];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 1]) ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Is `name` (an environment name, or a name from a file) a registered
 * parameter?  Otherwise put the closest registered name into hint. */
static int known_param(const char *name, int envform, char *hint, size_t hintlen)
{
    size_t best = (size_t)-1;
    hint[0] = '\0';
    for (int i = 0; i < nparams; i++) {
        char names[3][256];
        int n = param_envnames(&params[i], names);
        for (int k = 0; k < n; k++)
            if (!strcmp(name, names[k]) || (!envform && !strcasecmp(name, names[k]))) return 1;
        if (!envform && !strcasecmp(name, params[i].fullname)) return 1;
        const char *cand = envform ? names[0] : params[i].fullname;
        size_t d = edit_distance(name, cand);
        if (d < best) {
            best = d;
            snprintf(hint, hintlen, "%s", cand);
        }
    }
    /* suggest only near misses: a few typos, scaled with the length */
    size_t limit = 2 + strlen(name) / 10;
    if (best > limit) hint[0] = '\0';
    return 0;
}

static int runtime_var(const char *name)
{
    for (int i = 0; runtime_vars[i]; i++)
        if (!strcmp(name, runtime_vars[i])) return 1;
    for (int i = 0; runtime_prefixes[i]; i++)
        if (!strncmp(name, runtime_prefixes[i], strlen(runtime_prefixes[i]))) return 1;
    return 0;
}

KUMI_EXPORT void kumi_param_warn_unknown(void)
{
    static int done;
    pthread_mutex_lock(&param_lock);
    if (done || !should_warn()) {
        done = 1;
        pthread_mutex_unlock(&param_lock);
        return;
    }
    done = 1;
    load_files();
    char hint[256];
    for (char **ev = environ; ev && *ev; ev++) {
        if (strncmp(*ev, "KUMI_", 5) != 0) continue;
        const char *eq = strchr(*ev, '=');
        size_t len = eq ? (size_t)(eq - *ev) : strlen(*ev);
        char name[256];
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, *ev, len);
        name[len] = '\0';
        if (runtime_var(name) || known_param(name, 1, hint, sizeof hint)) continue;
        if (hint[0])
            kumi_warn("%s is set but names no parameter (did you mean %s?)", name, hint);
        else
            kumi_warn("%s is set but names no parameter (kumi_info --param all all lists them)", name);
    }
    for (int i = 0; i < nfentries; i++) {
        if (known_param(fentries[i].name, 0, hint, sizeof hint)) continue;
        if (hint[0])
            kumi_warn("%s:%d: '%s' names no parameter (did you mean %s?)", fentries[i].file, fentries[i].line,
                      fentries[i].name, hint);
        else
            kumi_warn("%s:%d: '%s' names no parameter", fentries[i].file, fentries[i].line, fentries[i].name);
    }
    pthread_mutex_unlock(&param_lock);
}
