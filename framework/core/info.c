/* MPI_Info: ordered (key, value) string pairs, MPI_INFO_ENV and
 * MPI_Info_create_env.
 *
 * Keys keep the order in which they were first set (MPI_Info_get_nthkey);
 * setting a key again replaces its value in place.  A key is 1 to
 * MPI_MAX_INFO_KEY characters, a value at most MPI_MAX_INFO_VAL.
 *
 * MPI_INFO_ENV is filled at first use with what Kumi knows of the start:
 * command and argv (from /proc/self/cmdline), maxprocs (the world size),
 * host, arch, wdir, thread_level.  The MPI_Info functions may be called
 * before MPI_Init and after MPI_Finalize (MPI 4.1 sec. 11.2.1). */
#include "core/core.h"
#include "core/check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

struct kumi_info_kv {
    char *key, *val;
};

struct kumi_info {
    uint32_t magic;                 /* KUMI_MAGIC_INFO */
    int refcount;
    int nkeys, cap;
    struct kumi_info_kv *kv;
    bool predefined;                /* MPI_INFO_ENV */
    MPI_Info handle;
};

static struct kumi_info info_env = { .magic = KUMI_MAGIC_INFO, .refcount = 1, .predefined = true,
                                     .handle = MPI_INFO_ENV };
static bool env_filled;

static int find(const struct kumi_info *i, const char *key)
{
    for (int k = 0; k < i->nkeys; k++)
        if (!strcmp(i->kv[k].key, key)) return k;
    return -1;
}

static int check_key(const char *fn, const char *key)
{
    if (!key) return kumi_error(MPI_ERR_INFO_KEY, "%s: argument key is NULL", fn);
    size_t n = strlen(key);
    if (n == 0) return kumi_error(MPI_ERR_INFO_KEY, "%s: argument key is empty", fn);
    if (n > MPI_MAX_INFO_KEY)
        return kumi_error(MPI_ERR_INFO_KEY, "%s: argument key is %zu characters long, more than MPI_MAX_INFO_KEY (%d)",
                          fn, n, MPI_MAX_INFO_KEY);
    return MPI_SUCCESS;
}

static int set_value(const char *fn, struct kumi_info *i, const char *key, const char *value)
{
    int rc = check_key(fn, key);
    if (rc) return rc;
    if (!value) return kumi_error(MPI_ERR_INFO_VALUE, "%s: argument value is NULL", fn);
    size_t n = strlen(value);
    if (n > MPI_MAX_INFO_VAL)
        return kumi_error(MPI_ERR_INFO_VALUE, "%s: argument value is %zu characters long, more than "
                          "MPI_MAX_INFO_VAL (%d)", fn, n, MPI_MAX_INFO_VAL);
    char *v = strdup(value);
    if (!v) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    int k = find(i, key);
    if (k >= 0) {
        free(i->kv[k].val);
        i->kv[k].val = v;
        return MPI_SUCCESS;
    }
    if (i->nkeys == i->cap) {
        int c = i->cap ? 2 * i->cap : 8;
        struct kumi_info_kv *t = realloc(i->kv, sizeof *t * (size_t)c);
        if (!t) {
            free(v);
            return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
        }
        i->kv = t;
        i->cap = c;
    }
    char *kc = strdup(key);
    if (!kc) {
        free(v);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn);
    }
    i->kv[i->nkeys].key = kc;
    i->kv[i->nkeys].val = v;
    i->nkeys++;
    return MPI_SUCCESS;
}

static void clear(struct kumi_info *i)
{
    for (int k = 0; k < i->nkeys; k++) {
        free(i->kv[k].key);
        free(i->kv[k].val);
    }
    free(i->kv);
    i->kv = NULL;
    i->nkeys = i->cap = 0;
}

static struct kumi_info *info_new(void)
{
    struct kumi_info *i = calloc(1, sizeof *i);
    if (!i) return NULL;
    i->magic = KUMI_MAGIC_INFO;
    i->refcount = 1;
    i->handle = (MPI_Info)i;
    return i;
}

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "MPI_THREAD_SINGLE";
    }
}

/* The environment keys: command and argv from argv (or /proc/self/cmdline when argv is NULL). */
static int fill_env(struct kumi_info *i, int argc, char **argv)
{
    static const char fn[] = "MPI_Info_create_env";
    char *cmdline = NULL;
    size_t len = 0;
    int rc = MPI_SUCCESS;
    char **av = argv;
    int ac = argc;
    if (!av) {
        FILE *f = fopen("/proc/self/cmdline", "r");
        if (f) {
            size_t cap = 0;
            for (;;) {
                if (len + 4096 > cap) {
                    char *t = realloc(cmdline, cap + 4096 + 1);
                    if (!t) break;
                    cmdline = t;
                    cap += 4096;
                }
                size_t r = fread(cmdline + len, 1, cap - len, f);
                if (r == 0) break;
                len += r;
            }
            fclose(f);
        }
        ac = 0;
        for (size_t p = 0; p < len; p += strlen(cmdline + p) + 1) ac++;
        av = calloc((size_t)ac + 1, sizeof *av);
        if (!av && ac) ac = 0;
        int n = 0;
        for (size_t p = 0; p < len && n < ac; p += strlen(cmdline + p) + 1) av[n++] = cmdline + p;
    }
    if (ac > 0 && av[0]) rc = set_value(fn, i, "command", av[0]);
    if (!rc && ac > 1) {
        size_t total = 1;
        for (int a = 1; a < ac; a++) total += strlen(av[a]) + 1;
        char *s = malloc(total);
        if (s) {
            s[0] = 0;
            for (int a = 1; a < ac; a++) {
                if (a > 1) strcat(s, " ");
                strcat(s, av[a]);
            }
            if (strlen(s) > MPI_MAX_INFO_VAL) s[MPI_MAX_INFO_VAL] = 0;
            rc = set_value(fn, i, "argv", s);
            free(s);
        }
    }
    if (av != argv) {
        free(av);
        free(cmdline);
    }
    char buf[4096];
    int size = kumi_state == KUMI_STATE_PRE ? -1 : kumi_world_size();
    if (size < 0) {
        const char *e = getenv("KUMI_SIZE");
        size = e ? atoi(e) : 1;
    }
    snprintf(buf, sizeof buf, "%d", size);
    if (!rc) rc = set_value(fn, i, "maxprocs", buf);
    if (!rc) {
        const char *h = kumi_state == KUMI_STATE_PRE ? NULL : kumi_hostname();
        if (!h && gethostname(buf, sizeof buf - 1) == 0) {
            buf[sizeof buf - 1] = 0;
            h = buf;
        }
        if (h) rc = set_value(fn, i, "host", h);
    }
    struct utsname u;
    if (!rc && uname(&u) == 0) rc = set_value(fn, i, "arch", u.machine);
    if (!rc && getcwd(buf, sizeof buf)) rc = set_value(fn, i, "wdir", buf);
    if (!rc) rc = set_value(fn, i, "thread_level", thread_level_name(kumi_thread_level));
    return rc;
}

/* ------------------------------------------------ API for the core */
struct kumi_info *kumi_info_get(MPI_Info h)
{
    if (h == MPI_INFO_ENV) {
        if (!env_filled) {
            env_filled = true;
            fill_env(&info_env, 0, NULL);
        }
        return &info_env;
    }
    uintptr_t v = (uintptr_t)h;
    if (v < KUMI_PREDEF_MAX || (v & 7)) return NULL;
    struct kumi_info *i = (struct kumi_info *)h;
    return i->magic == KUMI_MAGIC_INFO ? i : NULL;
}

MPI_Info kumi_info_handle(const struct kumi_info *i) { return i ? i->handle : MPI_INFO_NULL; }

struct kumi_info *kumi_info_dup(const struct kumi_info *in)
{
    struct kumi_info *i = info_new();
    if (!i) return NULL;
    for (int k = 0; in && k < in->nkeys; k++)
        if (set_value("MPI_Info_dup", i, in->kv[k].key, in->kv[k].val)) {
            kumi_info_release(i);
            return NULL;
        }
    return i;
}

void kumi_info_retain(struct kumi_info *i)
{
    if (i) i->refcount++;
}

void kumi_info_release(struct kumi_info *i)
{
    if (!i || i->predefined || --i->refcount > 0) return;
    clear(i);
    i->magic = KUMI_MAGIC_DEAD;
    free(i);
}

const char *kumi_info_value(const struct kumi_info *i, const char *key)
{
    int k = i && key ? find(i, key) : -1;
    return k >= 0 ? i->kv[k].val : NULL;
}

int kumi_info_set_value(struct kumi_info *i, const char *key, const char *value)
{
    return set_value("MPI_Info_set", i, key, value);
}

/* ------------------------------------------------------- MPI functions */
/* No communicator argument: errors go through kumi_err_handle(NULL, ...). */
#define FAIL(...) return kumi_err_handle(NULL, kumi_error(__VA_ARGS__))

static int bad_info(const char *fn, MPI_Info h)
{
    if (h == MPI_INFO_NULL) return kumi_err_handle(NULL, kumi_error(MPI_ERR_INFO, "%s: argument info is MPI_INFO_NULL", fn));
    return kumi_err_handle(NULL, kumi_error(MPI_ERR_INFO, "%s: argument info is not a valid info object", fn));
}

int kumi_mpi_info_create(MPI_Info *info)
{
    if (!info) FAIL(MPI_ERR_ARG, "MPI_Info_create: argument info is NULL");
    struct kumi_info *i = info_new();
    if (!i) FAIL(MPI_ERR_NO_MEM, "MPI_Info_create: out of memory");
    *info = i->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_info_create_env(int argc, char *argv[], MPI_Info *info)
{
    char **av = argv;
    if (!info) FAIL(MPI_ERR_ARG, "MPI_Info_create_env: argument info is NULL");
    if (argc < 0) FAIL(MPI_ERR_ARG, "MPI_Info_create_env: argument argc is negative (%d)", argc);
    struct kumi_info *i = info_new();
    if (!i) FAIL(MPI_ERR_NO_MEM, "MPI_Info_create_env: out of memory");
    int rc = fill_env(i, av ? argc : 0, av);
    if (rc) {
        kumi_info_release(i);
        return kumi_err_handle(NULL, rc);
    }
    *info = i->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_info_set(MPI_Info info, const char *key, const char *value)
{
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info("MPI_Info_set", info);
    return kumi_err_handle(NULL, set_value("MPI_Info_set", i, key, value));
}

int kumi_mpi_info_delete(MPI_Info info, const char *key)
{
    static const char fn[] = "MPI_Info_delete";
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info(fn, info);
    int rc = check_key(fn, key);
    if (rc) return kumi_err_handle(NULL, rc);
    int k = find(i, key);
    if (k < 0) FAIL(MPI_ERR_INFO_NOKEY, "%s: key \"%s\" is not in the info object", fn, key);
    free(i->kv[k].key);
    free(i->kv[k].val);
    memmove(&i->kv[k], &i->kv[k + 1], sizeof *i->kv * (size_t)(i->nkeys - k - 1));
    i->nkeys--;
    return MPI_SUCCESS;
}

int kumi_mpi_info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    static const char fn[] = "MPI_Info_get";
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info(fn, info);
    int rc = check_key(fn, key);
    if (rc) return kumi_err_handle(NULL, rc);
    if (valuelen < 0) FAIL(MPI_ERR_ARG, "%s: argument valuelen is negative (%d)", fn, valuelen);
    if (!flag) FAIL(MPI_ERR_ARG, "%s: argument flag is NULL", fn);
    if (!value) FAIL(MPI_ERR_ARG, "%s: argument value is NULL", fn);
    int k = find(i, key);
    *flag = k >= 0;
    if (k >= 0) {
        /* value has room for valuelen characters and the terminating NUL */
        size_t n = strlen(i->kv[k].val);
        if (n > (size_t)valuelen) n = (size_t)valuelen;
        memcpy(value, i->kv[k].val, n);
        value[n] = 0;
    }
    return MPI_SUCCESS;
}

int kumi_mpi_info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
    static const char fn[] = "MPI_Info_get_string";
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info(fn, info);
    int rc = check_key(fn, key);
    if (rc) return kumi_err_handle(NULL, rc);
    if (!buflen || !flag) FAIL(MPI_ERR_ARG, "%s: argument %s is NULL", fn, buflen ? "flag" : "buflen");
    if (*buflen < 0) FAIL(MPI_ERR_ARG, "%s: argument buflen is negative (%d)", fn, *buflen);
    if (*buflen > 0 && !value) FAIL(MPI_ERR_ARG, "%s: argument value is NULL", fn);
    int k = find(i, key);
    *flag = k >= 0;
    if (k < 0) return MPI_SUCCESS;
    size_t n = strlen(i->kv[k].val);
    if (*buflen > 0) {
        /* as much of the value as fits, always NUL-terminated */
        size_t m = n < (size_t)*buflen - 1 ? n : (size_t)*buflen - 1;
        memcpy(value, i->kv[k].val, m);
        value[m] = 0;
    }
    *buflen = (int)n + 1;
    return MPI_SUCCESS;
}

int kumi_mpi_info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    static const char fn[] = "MPI_Info_get_valuelen";
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info(fn, info);
    int rc = check_key(fn, key);
    if (rc) return kumi_err_handle(NULL, rc);
    if (!valuelen || !flag) FAIL(MPI_ERR_ARG, "%s: argument %s is NULL", fn, valuelen ? "flag" : "valuelen");
    int k = find(i, key);
    *flag = k >= 0;
    if (k >= 0) *valuelen = (int)strlen(i->kv[k].val);
    return MPI_SUCCESS;
}

int kumi_mpi_info_get_nkeys(MPI_Info info, int *nkeys)
{
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info("MPI_Info_get_nkeys", info);
    if (!nkeys) FAIL(MPI_ERR_ARG, "MPI_Info_get_nkeys: argument nkeys is NULL");
    *nkeys = i->nkeys;
    return MPI_SUCCESS;
}

int kumi_mpi_info_get_nthkey(MPI_Info info, int n, char *key)
{
    static const char fn[] = "MPI_Info_get_nthkey";
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info(fn, info);
    if (n < 0 || n >= i->nkeys)
        FAIL(MPI_ERR_ARG, "%s: argument n is %d, not in 0..%d (the number of keys - 1)", fn, n, i->nkeys - 1);
    if (!key) FAIL(MPI_ERR_ARG, "%s: argument key is NULL", fn);
    strcpy(key, i->kv[n].key);        /* at most MPI_MAX_INFO_KEY characters */
    return MPI_SUCCESS;
}

int kumi_mpi_info_dup(MPI_Info info, MPI_Info *newinfo)
{
    struct kumi_info *i = kumi_info_get(info);
    if (!i) return bad_info("MPI_Info_dup", info);
    if (!newinfo) FAIL(MPI_ERR_ARG, "MPI_Info_dup: argument newinfo is NULL");
    struct kumi_info *d = kumi_info_dup(i);
    if (!d) FAIL(MPI_ERR_NO_MEM, "MPI_Info_dup: out of memory");
    *newinfo = d->handle;
    return MPI_SUCCESS;
}

int kumi_mpi_info_free(MPI_Info *info)
{
    if (!info) FAIL(MPI_ERR_ARG, "MPI_Info_free: argument info is NULL");
    struct kumi_info *i = kumi_info_get(*info);
    if (!i) return bad_info("MPI_Info_free", *info);
    if (i->predefined) FAIL(MPI_ERR_INFO, "MPI_Info_free: MPI_INFO_ENV cannot be freed");
    kumi_info_release(i);
    *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
