/* mpiexec: host lists (-host, --hostfile) and rank mapping; see hosts.c. */
#ifndef KUMI_MPIEXEC_HOSTS_H
#define KUMI_MPIEXEC_HOSTS_H

#include <stddef.h>

#define MX_HOST_NAME_MAX 255

struct mx_host {
    char *name;
    int slots;
};

struct mx_hostlist {
    struct mx_host *h;
    int n;
};

/* 1 when s[0..n) is a usable host name (letters, digits, . - _) */
int mx_host_name_ok(const char *s, size_t n);
/* Add a host (slots added to an existing entry of that name); -1: no memory */
int mx_hosts_add(struct mx_hostlist *hl, const char *name, size_t nl, int slots);
/* "h1,h2:4"; 0 or -1 with err set */
int mx_hosts_add_spec(struct mx_hostlist *hl, const char *spec, char *err, size_t errlen);
/* One hostfile line (file and lineno for messages); 0 or -1 with err set */
int mx_hosts_parse_line(struct mx_hostlist *hl, const char *line, const char *file, int lineno, char *err,
                        size_t errlen);
int mx_hosts_read_file(struct mx_hostlist *hl, const char *path, char *err, size_t errlen);
void mx_hosts_free(struct mx_hostlist *hl);
/* slots of all hosts (ppn > 0: ppn each) */
int mx_hosts_total_slots(const struct mx_hostlist *hl, int ppn);
/* host_of[r] = index of rank r's host; 0, or -1 with err set */
int mx_hosts_map(const struct mx_hostlist *hl, int np, int ppn, int bynode, int oversub, int *host_of,
                 char *err, size_t errlen);

#endif
