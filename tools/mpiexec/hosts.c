/* mpiexec: the hosts of a job and where its ranks go (pure logic: no I/O
 * but reading a hostfile; errors are returned as text, never printed, so
 * that tests/unit/test_hosts.c checks them in process).
 *
 * Host lists:
 *   -host h1,h2:4          a name, optionally ":slots"
 *   --hostfile FILE        one host per line, "#" starts a comment, blank
 *                          lines ignored; "h1", "h1 slots=4" (Open MPI; also
 *                          max_slots=N, accepted and ignored) or "h1:4"
 *                          (MPICH).  Errors name FILE:LINE.
 * A host without a slot count has 1 slot.  A host named twice adds its
 * slots (the order of first appearance is kept).
 *
 * Mapping (mx_hosts_map): -ppn N gives every host N slots.  map-by slot
 * (default) fills each host up to its slots, host by host; map-by node puts
 * one rank on each host in turn, skipping full hosts.  More ranks than
 * slots is an error unless oversubscribe: then the extra ranks go round-robin
 * over the hosts. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hosts.h"

static void seterr(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len) vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

int mx_host_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > MX_HOST_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '.' || c == '-' || c == '_')) return 0;
    }
    return s[0] != '-';
}

static int parse_slots(const char *s, size_t n, int *out)
{
    if (n == 0 || n > 7) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1) return -1;
    *out = v;
    return 0;
}

int mx_hosts_add(struct mx_hostlist *hl, const char *name, size_t nl, int slots)
{
    for (int i = 0; i < hl->n; i++)
        if (strlen(hl->h[i].name) == nl && memcmp(hl->h[i].name, name, nl) == 0) {
            hl->h[i].slots += slots;
            return 0;
        }
    struct mx_host *h = realloc(hl->h, (size_t)(hl->n + 1) * sizeof *h);
    if (!h) return -1;
    hl->h = h;
    char *nm = malloc(nl + 1);
    if (!nm) return -1;
    memcpy(nm, name, nl);
    nm[nl] = 0;
    hl->h[hl->n].name = nm;
    hl->h[hl->n].slots = slots;
    hl->n++;
    return 0;
}

void mx_hosts_free(struct mx_hostlist *hl)
{
    for (int i = 0; i < hl->n; i++) free(hl->h[i].name);
    free(hl->h);
    hl->h = NULL;
    hl->n = 0;
}

/* "name" or "name:slots" of length n */
static int add_item(struct mx_hostlist *hl, const char *s, size_t n, const char *where, char *err, size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t nl = colon ? (size_t)(colon - s) : n;
    int slots = 1;
    if (!mx_host_name_ok(s, nl)) {
        seterr(err, errlen, "%sinvalid host name '%.*s'", where, (int)n, s);
        return -1;
    }
    if (colon && parse_slots(colon + 1, n - nl - 1, &slots) < 0) {
        seterr(err, errlen, "%sinvalid slot count '%.*s' in '%.*s' (a number from 1)", where,
               (int)(n - nl - 1), colon + 1, (int)n, s);
        return -1;
    }
    if (mx_hosts_add(hl, s, nl, slots) < 0) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int mx_hosts_add_spec(struct mx_hostlist *hl, const char *spec, char *err, size_t errlen)
{
    const char *p = spec;
    if (!*p) {
        seterr(err, errlen, "-host: empty host list");
        return -1;
    }
    for (;;) {
        size_t n = strcspn(p, ",");
        if (n == 0) {
            seterr(err, errlen, "-host: empty host name in '%s'", spec);
            return -1;
        }
        if (add_item(hl, p, n, "-host: ", err, errlen) < 0) return -1;
        if (!p[n]) return 0;
        p += n + 1;
    }
}

int mx_hosts_parse_line(struct mx_hostlist *hl, const char *line, const char *file, int lineno, char *err,
                        size_t errlen)
{
    char where[512];
    snprintf(where, sizeof where, "%s:%d: ", file, lineno);
    size_t len = strcspn(line, "#\n\r");
    const char *w[8];
    size_t wl[8];
    int nw = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)line[i])) i++;
        if (i >= len) break;
        size_t st = i;
        while (i < len && !isspace((unsigned char)line[i])) i++;
        if (nw == 8) {
            seterr(err, errlen, "%stoo many words (expected 'HOST', 'HOST slots=N' or 'HOST:N')", where);
            return -1;
        }
        w[nw] = line + st;
        wl[nw++] = i - st;
    }
    if (nw == 0) return 0;                 /* blank or comment */
    if (nw == 1) return add_item(hl, w[0], wl[0], where, err, errlen);
    if (memchr(w[0], ':', wl[0])) {
        seterr(err, errlen, "%sunexpected '%.*s' after '%.*s' (expected 'HOST', 'HOST slots=N' or 'HOST:N')", where,
               (int)wl[1], w[1], (int)wl[0], w[0]);
        return -1;
    }
    if (!mx_host_name_ok(w[0], wl[0])) {
        seterr(err, errlen, "%sinvalid host name '%.*s'", where, (int)wl[0], w[0]);
        return -1;
    }
    int slots = 1, have = 0;
    for (int k = 1; k < nw; k++) {
        const char *eq = memchr(w[k], '=', wl[k]);
        size_t kl = eq ? (size_t)(eq - w[k]) : wl[k];
        int v;
        int isslots = eq && kl == 5 && strncmp(w[k], "slots", 5) == 0;
        int ismax = eq && kl == 9 && strncmp(w[k], "max_slots", 9) == 0;
        if (!isslots && !ismax) {
            seterr(err, errlen, "%sunexpected '%.*s' (expected 'HOST', 'HOST slots=N' or 'HOST:N')", where,
                   (int)wl[k], w[k]);
            return -1;
        }
        if (parse_slots(eq + 1, wl[k] - kl - 1, &v) < 0) {
            seterr(err, errlen, "%sinvalid slot count '%.*s' (a number from 1)", where, (int)wl[k], w[k]);
            return -1;
        }
        if (isslots) {
            slots = v;
            have = 1;
        }
    }
    (void)have;
    if (mx_hosts_add(hl, w[0], wl[0], slots) < 0) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int mx_hosts_read_file(struct mx_hostlist *hl, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        seterr(err, errlen, "cannot read hostfile %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0, before = hl->n;
    while (getline(&line, &cap, f) >= 0) {
        lineno++;
        if (mx_hosts_parse_line(hl, line, path, lineno, err, errlen) < 0) {
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(f);
    if (rc == 0 && hl->n == before) {
        seterr(err, errlen, "hostfile %s names no host", path);
        rc = -1;
    }
    return rc;
}

int mx_hosts_total_slots(const struct mx_hostlist *hl, int ppn)
{
    long t = 0;
    for (int i = 0; i < hl->n; i++) t += ppn > 0 ? ppn : hl->h[i].slots;
    return t > 1000000 ? 1000000 : (int)t;
}

int mx_hosts_map(const struct mx_hostlist *hl, int np, int ppn, int bynode, int oversub, int *host_of,
                 char *err, size_t errlen)
{
    if (hl->n == 0 || np < 1) {
        seterr(err, errlen, "no host to run on");
        return -1;
    }
    int total = mx_hosts_total_slots(hl, ppn);
    if (np > total && !oversub) {
        seterr(err, errlen, "%d process%s asked for, but the host list has %d slot%s (%d host%s); "
               "add slots (-host h:N, 'h slots=N'), lower -n, or allow it with --oversubscribe",
               np, np == 1 ? "" : "es", total, total == 1 ? "" : "s", hl->n, hl->n == 1 ? "" : "s");
        return -1;
    }
    int *used = calloc((size_t)hl->n, sizeof *used);
    if (!used) {
        seterr(err, errlen, "out of memory");
        return -1;
    }
    int r = 0;
    if (!bynode) {
        for (int h = 0; h < hl->n && r < np; h++) {
            int s = ppn > 0 ? ppn : hl->h[h].slots;
            for (int k = 0; k < s && r < np; k++) host_of[r++] = h, used[h]++;
        }
    } else {
        while (r < np && r < total) {
            for (int h = 0; h < hl->n && r < np; h++) {
                int s = ppn > 0 ? ppn : hl->h[h].slots;
                if (used[h] < s) host_of[r++] = h, used[h]++;
            }
        }
    }
    /* oversubscribed: the rest round-robin */
    for (int h = 0; r < np; h = (h + 1) % hl->n) host_of[r++] = h;
    free(used);
    return 0;
}
