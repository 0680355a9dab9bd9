/* Slurm's compressed host lists and per-node counts (see slurm_hosts.h). */
#include "slurm_hosts.h"
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sh_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

struct sh_list { char **v; int n, cap; };

static int sh_push(struct sh_list *l, char *s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

void kumi_slurm_hosts_free(char **hosts, int n)
{
    for (int i = 0; hosts && i < n; i++) free(hosts[i]);
    free(hosts);
}

/* One range of a bracket group: "07" or "08-10". */
struct sh_range { unsigned long lo, hi; int width; };

/* Parse the group between '[' and ']' (s .. e, exclusive). */
static int sh_group(const char *list, const char *s, const char *e, struct sh_range **out, int *nout, char *err,
                    size_t errlen)
{
    struct sh_range *r = NULL;
    int n = 0, cap = 0;
    const char *p = s;
    if (p == e) return sh_err(err, errlen, "empty brackets at column %d of \"%s\"", (int)(s - list), list);
    while (p < e) {
        const char *q = p;
        while (q < e && isdigit((unsigned char)*q)) q++;
        if (q == p || q - p > 18) {
            free(r);
            return sh_err(err, errlen, "expected a number at column %d of \"%s\"", (int)(p - list) + 1, list);
        }
        struct sh_range x;
        x.width = (int)(q - p);
        x.lo = x.hi = strtoul(p, NULL, 10);
        if (q < e && *q == '-') {
            const char *t = ++q;
            while (q < e && isdigit((unsigned char)*q)) q++;
            if (q == t || q - t > 18) {
                free(r);
                return sh_err(err, errlen, "expected a number after '-' at column %d of \"%s\"", (int)(t - list) + 1,
                              list);
            }
            x.hi = strtoul(t, NULL, 10);
            if (x.hi < x.lo) {
                free(r);
                return sh_err(err, errlen, "descending range %.*s at column %d of \"%s\"", (int)(q - p), p,
                              (int)(p - list) + 1, list);
            }
        }
        if (q < e && *q != ',') {
            free(r);
            return sh_err(err, errlen, "unexpected '%c' at column %d of \"%s\"", *q, (int)(q - list) + 1, list);
        }
        if (x.hi - x.lo >= KUMI_SLURM_HOSTS_MAX) {
            free(r);
            return sh_err(err, errlen, "range %.*s longer than %d hosts in \"%s\"", (int)(q - p), p,
                          KUMI_SLURM_HOSTS_MAX, list);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            struct sh_range *nr = realloc(r, (size_t)cap * sizeof *nr);
            if (!nr) {
                free(r);
                return sh_err(err, errlen, "out of memory");
            }
            r = nr;
        }
        r[n++] = x;
        if (q < e) {                       /* ',' */
            q++;
            if (q == e) {
                free(r);
                return sh_err(err, errlen, "',' before ']' at column %d of \"%s\"", (int)(q - list), list);
            }
        }
        p = q;
    }
    *out = r;
    *nout = n;
    return 0;
}

/* Expand one name (s .. e, exclusive, no separators outside brackets):
 * pieces of text and bracket groups, every combination. */
static int sh_name(const char *list, const char *s, const char *e, struct sh_list *res, char *err, size_t errlen)
{
    /* the name as pieces: text, group, text, group, ... */
    enum { MAXG = 8 };
    const char *txt[MAXG + 1];
    size_t txtlen[MAXG + 1];
    struct sh_range *g[MAXG] = { 0 };
    int gn[MAXG] = { 0 }, ng = 0, rc = 0;
    const char *p = s;
    for (;;) {
        const char *b = p;
        while (b < e && *b != '[' && *b != ']') b++;
        if (b < e && *b == ']') {
            rc = sh_err(err, errlen, "']' without '[' at column %d of \"%s\"", (int)(b - list) + 1, list);
            goto out;
        }
        txt[ng] = p;
        txtlen[ng] = (size_t)(b - p);
        if (b == e) break;
        const char *c = b + 1;
        while (c < e && *c != ']' && *c != '[') c++;
        if (c == e || *c == '[') {
            rc = sh_err(err, errlen, "'[' at column %d of \"%s\" is not closed", (int)(b - list) + 1, list);
            goto out;
        }
        if (ng == MAXG) {
            rc = sh_err(err, errlen, "more than %d bracket groups in one name of \"%s\"", MAXG, list);
            goto out;
        }
        if ((rc = sh_group(list, b + 1, c, &g[ng], &gn[ng], err, errlen)) != 0) goto out;
        ng++;
        p = c + 1;
    }
    {
        /* how many names, and the longest */
        unsigned long long total = 1;
        size_t len = 1;
        for (int i = 0; i <= ng; i++) len += txtlen[i];
        for (int i = 0; i < ng; i++) {
            unsigned long long cnt = 0;
            int w = 0;
            for (int k = 0; k < gn[i]; k++) {
                cnt += g[i][k].hi - g[i][k].lo + 1;
                char tmp[32];
                int l = snprintf(tmp, sizeof tmp, "%0*lu", g[i][k].width, g[i][k].hi);
                if (l > w) w = l;
            }
            total *= cnt;
            len += (size_t)w;
            if (total + (unsigned long long)res->n > KUMI_SLURM_HOSTS_MAX) {
                rc = sh_err(err, errlen, "\"%s\" names more than %d hosts", list, KUMI_SLURM_HOSTS_MAX);
                goto out;
            }
        }
        /* odometer over the groups: idx[i] = range, val[i] = value */
        int ri[MAXG] = { 0 };
        unsigned long val[MAXG];
        for (int i = 0; i < ng; i++) val[i] = g[i][0].lo;
        for (;;) {
            char *name = malloc(len), *w = name;
            if (!name) {
                rc = sh_err(err, errlen, "out of memory");
                goto out;
            }
            for (int i = 0; i <= ng; i++) {
                memcpy(w, txt[i], txtlen[i]);
                w += txtlen[i];
                if (i < ng) w += sprintf(w, "%0*lu", g[i][ri[i]].width, val[i]);
            }
            *w = 0;
            if (sh_push(res, name) < 0) {
                free(name);
                rc = sh_err(err, errlen, "out of memory");
                goto out;
            }
            int i = ng - 1;
            for (; i >= 0; i--) {
                if (val[i] < g[i][ri[i]].hi) {
                    val[i]++;
                    break;
                }
                if (ri[i] + 1 < gn[i]) {
                    ri[i]++;
                    val[i] = g[i][ri[i]].lo;
                    break;
                }
                ri[i] = 0;
                val[i] = g[i][0].lo;
            }
            if (i < 0) break;
        }
    }
out:
    for (int i = 0; i < ng; i++) free(g[i]);
    return rc;
}

static int sh_sep(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

int kumi_slurm_hosts_expand(const char *list, char ***hosts, int *n, char *err, size_t errlen)
{
    struct sh_list res = { 0 };
    *hosts = NULL;
    *n = 0;
    if (!list) return sh_err(err, errlen, "no host list");
    const char *p = list;
    for (;;) {
        while (*p && sh_sep(*p)) p++;      /* empty names are skipped, as Slurm does */
        if (!*p) break;
        const char *e = p;
        int depth = 0;
        while (*e && (depth || !sh_sep(*e))) {
            if (*e == '[') depth++;
            else if (*e == ']' && depth) depth--;
            e++;
        }
        if (sh_name(list, p, e, &res, err, errlen) != 0) {
            kumi_slurm_hosts_free(res.v, res.n);
            return -1;
        }
        p = e;
    }
    if (res.n == 0) return sh_err(err, errlen, "empty host list");
    *hosts = res.v;
    *n = res.n;
    return 0;
}

int kumi_slurm_counts_expand(const char *spec, int **counts, int *n, char *err, size_t errlen)
{
    int *v = NULL, nv = 0, cap = 0;
    const char *p = spec;
    *counts = NULL;
    *n = 0;
    if (!spec || !*spec) return sh_err(err, errlen, "empty count list");
    for (;;) {
        char *end;
        errno = 0;
        long c = strtol(p, &end, 10), rep = 1;
        if (end == p || errno || c < 0 || c > INT_MAX || !isdigit((unsigned char)*p)) {
            free(v);
            return sh_err(err, errlen, "expected a count at column %d of \"%s\"", (int)(p - spec) + 1, spec);
        }
        p = end;
        if (*p == '(') {
            if (p[1] != 'x' || !isdigit((unsigned char)p[2])) {
                free(v);
                return sh_err(err, errlen, "expected \"(xN)\" at column %d of \"%s\"", (int)(p - spec) + 1, spec);
            }
            errno = 0;
            rep = strtol(p + 2, &end, 10);
            if (errno || *end != ')' || rep < 1 || rep > KUMI_SLURM_HOSTS_MAX - nv) {
                free(v);
                return sh_err(err, errlen, "bad repeat count at column %d of \"%s\"", (int)(p - spec) + 1, spec);
            }
            p = end + 1;
        }
        if (nv + rep > cap) {
            while (nv + rep > cap) cap = cap ? 2 * cap : 16;
            int *nw = realloc(v, (size_t)cap * sizeof *nw);
            if (!nw) {
                free(v);
                return sh_err(err, errlen, "out of memory");
            }
            v = nw;
        }
        for (long i = 0; i < rep; i++) v[nv++] = (int)c;
        if (!*p) break;
        if (*p != ',' || !p[1]) {
            free(v);
            return sh_err(err, errlen, "unexpected '%c' at column %d of \"%s\"", *p, (int)(p - spec) + 1, spec);
        }
        p++;
    }
    *counts = v;
    *n = nv;
    return 0;
}
