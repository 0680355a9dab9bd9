/* mpiexec: where each rank runs (--bind-to, the default binding,
 * --report-bindings).  The rules are in mpiexec.h.
 *
 * A plan is a list of slots, one per place a rank may go (a core, or a
 * hwthread for --bind-to hwthread), in topology order, each restricted to
 * mpiexec's own affinity mask; rank r takes slot r (r modulo the number of
 * slots when overloading is allowed) and is bound to the object of the
 * level asked that holds its slot (the core, the hwthread, the package). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef KUMI_MPIEXEC_HWLOC
#include <hwloc.h>
#endif
#include "mpiexec.h"

struct bind_slot {
    cpu_set_t *set;      /* CPUs of the object the rank is bound to */
    int index;           /* its logical index */
};

static size_t bind_setsize;   /* bytes of every cpu_set_t here */
static int bind_ncpu;         /* bits of every cpu_set_t here */

static void *bind_oom(void *p)
{
    if (!p) {
        mx_msg("out of memory");
        exit(1);
    }
    return p;
}

static cpu_set_t *bind_set_new(void)
{
    cpu_set_t *s = bind_oom(CPU_ALLOC((size_t)bind_ncpu));
    CPU_ZERO_S(bind_setsize, s);
    return s;
}

/* mpiexec's own affinity mask (sizes the sets: grows until the kernel takes it). */
static cpu_set_t *bind_allowed(void)
{
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    int n = conf > 1024 ? (int)conf : 1024;
    for (;;) {
        cpu_set_t *s = bind_oom(CPU_ALLOC((size_t)n));
        size_t sz = CPU_ALLOC_SIZE((size_t)n);
        CPU_ZERO_S(sz, s);
        if (sched_getaffinity(0, sz, s) == 0) {
            bind_ncpu = n;
            bind_setsize = sz;
            return s;
        }
        CPU_FREE(s);
        if (errno != EINVAL || n > (1 << 22)) return NULL;
        n *= 2;
    }
}

/* "0-3,8,10-11" */
static char *bind_list(const cpu_set_t *s)
{
    size_t cap = 64, len = 0;
    char *b = bind_oom(malloc(cap));
    b[0] = 0;
    for (int i = 0; i < bind_ncpu; i++) {
        if (!CPU_ISSET_S((size_t)i, bind_setsize, s)) continue;
        int j = i;
        while (j + 1 < bind_ncpu && CPU_ISSET_S((size_t)j + 1, bind_setsize, s)) j++;
        char item[48];
        int n = j == i ? snprintf(item, sizeof item, "%s%d", len ? "," : "", i)
                       : snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", i, j);
        if (len + (size_t)n + 1 > cap) {
            while (len + (size_t)n + 1 > cap) cap *= 2;
            b = bind_oom(realloc(b, cap));
        }
        memcpy(b + len, item, (size_t)n + 1);
        len += (size_t)n;
        i = j;
    }
    return b;
}

static const char *bind_level_name(enum mx_bind_level l)
{
    switch (l) {
    case MX_BIND_HWTHREAD: return "hwthread";
    case MX_BIND_PACKAGE: return "package";
    default: return "core";
    }
}

#ifdef KUMI_MPIEXEC_HWLOC
static int bind_slots_hwloc(enum mx_bind_level level, const cpu_set_t *allowed, struct bind_slot **out, int *nout)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return -1;
    hwloc_topology_set_cache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    hwloc_obj_type_t st = level == MX_BIND_HWTHREAD ? HWLOC_OBJ_PU : HWLOC_OBJ_CORE;
    int nobj = hwloc_get_nbobjs_by_type(topo, st);
    if (nobj <= 0) {                       /* no core level known: hwthreads */
        st = HWLOC_OBJ_PU;
        nobj = hwloc_get_nbobjs_by_type(topo, st);
    }
    if (nobj <= 0) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    struct bind_slot *slots = bind_oom(calloc((size_t)nobj, sizeof *slots));
    int ns = 0;
    for (int i = 0; i < nobj; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(topo, st, (unsigned)i);
        if (!o || !o->cpuset) continue;
        hwloc_obj_t b = o;
        if (level == MX_BIND_PACKAGE) {
            b = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, o);
            if (!b) b = hwloc_get_root_obj(topo);
        }
        /* slot CPUs and bound CPUs, both inside the allowed mask */
        int usable = 0;
        cpu_set_t *set = bind_set_new();
        unsigned k;
        hwloc_bitmap_foreach_begin(k, o->cpuset)
            if ((int)k < bind_ncpu && CPU_ISSET_S(k, bind_setsize, allowed)) usable = 1;
        hwloc_bitmap_foreach_end();
        hwloc_bitmap_foreach_begin(k, b->cpuset)
            if ((int)k < bind_ncpu && CPU_ISSET_S(k, bind_setsize, allowed)) CPU_SET_S(k, bind_setsize, set);
        hwloc_bitmap_foreach_end();
        if (!usable) {
            CPU_FREE(set);
            continue;
        }
        slots[ns].set = set;
        slots[ns].index = b->type == HWLOC_OBJ_MACHINE ? 0 : (int)b->logical_index;
        ns++;
    }
    hwloc_topology_destroy(topo);
    *out = slots;
    *nout = ns;
    return 0;
}
#endif

/* Without hwloc: one slot per CPU of the mask; packages from sysfs. */
static int bind_sysfs_package(int cpu)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    int id = 0;
    if (f) {
        if (fscanf(f, "%d", &id) != 1 || id < 0) id = 0;
        fclose(f);
    }
    return id;
}

static int bind_slots_plain(enum mx_bind_level level, const cpu_set_t *allowed, struct bind_slot **out, int *nout)
{
    int n = CPU_COUNT_S(bind_setsize, allowed);
    struct bind_slot *slots = bind_oom(calloc((size_t)(n ? n : 1), sizeof *slots));
    int ns = 0;
    for (int c = 0; c < bind_ncpu && ns < n; c++) {
        if (!CPU_ISSET_S((size_t)c, bind_setsize, allowed)) continue;
        cpu_set_t *set = bind_set_new();
        if (level == MX_BIND_PACKAGE) {
            int pk = bind_sysfs_package(c);
            for (int d = 0; d < bind_ncpu; d++)
                if (CPU_ISSET_S((size_t)d, bind_setsize, allowed) && bind_sysfs_package(d) == pk)
                    CPU_SET_S((size_t)d, bind_setsize, set);
            slots[ns].index = pk;
        } else {
            CPU_SET_S((size_t)c, bind_setsize, set);
            slots[ns].index = c;
        }
        slots[ns].set = set;
        ns++;
    }
    *out = slots;
    *nout = ns;
    return 0;
}

int mx_bind_plan(struct mx_job *job, enum mx_bind_level level, int overload)
{
    job->bind = bind_oom(calloc((size_t)job->n, sizeof *job->bind));
    if (level == MX_BIND_NONE) {
        job->unbound_why = strdup("--bind-to none");
        return 0;
    }
    int explicit = level != MX_BIND_DEFAULT;
    enum mx_bind_level lv = explicit ? level : MX_BIND_CORE;
    cpu_set_t *allowed = bind_allowed();
    if (!allowed) {
        if (explicit) {
            mx_msg("--bind-to %s: cannot read mpiexec's CPU affinity: %s", bind_level_name(lv), strerror(errno));
            return -1;
        }
        job->unbound_why = strdup("CPU affinity unknown");
        return 0;
    }
    struct bind_slot *slots = NULL;
    int ns = 0, rc = -1;
#ifdef KUMI_MPIEXEC_HWLOC
    rc = bind_slots_hwloc(lv, allowed, &slots, &ns);
#endif
    if (rc != 0) bind_slots_plain(lv, allowed, &slots, &ns);
    const char *unit = lv == MX_BIND_HWTHREAD ? "hwthread" : "core";
    char *alist = bind_list(allowed);
    int ret = 0;
    if (ns == 0 || (job->n > ns && !overload)) {
        if (explicit) {
            mx_msg("--bind-to %s: %d process%s but only %d %s%s available (cpus %s); "
                   "use --oversubscribe to bind several processes per %s, or --bind-to none",
                   bind_level_name(lv), job->n, job->n == 1 ? "" : "es", ns, unit, ns == 1 ? " is" : "s are",
                   alist, unit);
            ret = -1;
        } else {
            char b[128];
            snprintf(b, sizeof b, "%d process%s, %d %s%s", job->n, job->n == 1 ? "" : "es", ns, unit,
                     ns == 1 ? "" : "s");
            job->unbound_why = bind_oom(strdup(b));
        }
    } else {
        for (int r = 0; r < job->n; r++) {
            struct bind_slot *s = &slots[r % ns];
            struct mx_binding *b = &job->bind[r];
            b->bound = 1;
            b->level = bind_level_name(lv);
            b->index = s->index;
            b->setsize = bind_setsize;
            b->cpuset = bind_set_new();
            memcpy(b->cpuset, s->set, bind_setsize);
            b->cpus = bind_list(s->set);
            b->shared = job->n - r % ns > ns;     /* rank r + ns or r - ns is on it too */
        }
    }
    for (int i = 0; i < ns; i++) CPU_FREE(slots[i].set);
    free(slots);
    free(alist);
    CPU_FREE(allowed);
    return ret;
}

void mx_bind_report(const struct mx_job *job, int r)
{
    const struct mx_binding *b = &job->bind[r];
    if (b->bound) mx_msg("rank %d bound to %s %d (cpus %s)", r, b->level, b->index, b->cpus);
    else mx_msg("rank %d not bound (%s)", r, job->unbound_why ? job->unbound_why : "no binding");
}
