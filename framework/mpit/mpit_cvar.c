/* MPI_T: initialization, control variables, enumerations and the event
 * source (see mpit.h).
 *
 * Control variables are Kumi's parameters, one for one and in the registry's
 * order (indices never change: parameters are only ever added), named as
 * kumi_info lists them (p2p_tcp_if_include).  Their types: int -> MPI_LONG_LONG,
 * size -> MPI_UNSIGNED_LONG, bool -> MPI_INT (enumeration "kumi_bool"),
 * double -> MPI_DOUBLE, string -> MPI_CHAR (count: the longest value).
 * Verbosity follows the parameter's level (1-3 user, 4-6 tuner, 7-9
 * developer: basic, detail, all).  A parameter its owner declared changeable
 * at run time (kumi_param_set_runtime) has scope MPI_T_SCOPE_LOCAL and may be
 * written; the others are MPI_T_SCOPE_READONLY (set at start-up from the
 * environment and the parameter files) and MPI_T_cvar_write refuses them
 * with MPI_T_ERR_CVAR_SET_NEVER.  All are bound to no object. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                 /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
#endif
#include "mpit/mpit.h"
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

pthread_mutex_t kumi_mpit_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
int kumi_mpit_refcount;

#define CVAR_MAGIC 0x4b435648u
#define STRING_COUNT 1024            /* longest string value (struct kumi_param_info.value) */

struct cvar_handle {
    uint32_t magic;
    int index;
    struct cvar_handle *next;
};
static struct cvar_handle *cvar_handles;

void kumi_mpit_string(const char *s, char *buf, int *len)
{
    if (!len) return;
    int need = (int)strlen(s ? s : "") + 1;
    if (!buf || *len <= 0) {
        *len = need;
        return;
    }
    int n = need < *len ? need : *len;
    memcpy(buf, s ? s : "", (size_t)n - 1);
    buf[n - 1] = '\0';
    *len = n;
}

int kumi_mpit_verbosity(int level)
{
    static const int v[] = { MPI_T_VERBOSITY_USER_BASIC, MPI_T_VERBOSITY_USER_DETAIL, MPI_T_VERBOSITY_USER_ALL,
                             MPI_T_VERBOSITY_TUNER_BASIC, MPI_T_VERBOSITY_TUNER_DETAIL, MPI_T_VERBOSITY_TUNER_ALL,
                             MPI_T_VERBOSITY_MPIDEV_BASIC, MPI_T_VERBOSITY_MPIDEV_DETAIL, MPI_T_VERBOSITY_MPIDEV_ALL };
    if (level < 1) level = 1;
    if (level > 9) level = 9;
    return v[level - 1];
}

MPI_Count kumi_mpit_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (MPI_Count)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ------------------------------------------------------------ init, finalize */

int kumi_mpi_t_init_thread(int required, int *provided)
{
    pthread_mutex_lock(&kumi_mpit_mutex);
    if (kumi_mpit_refcount == 0) {
        static int once;
        /* the parameters of every component, as kumi_info lists them (before
         * MPI_Init too: the registry loads the components without opening them) */
        if (kumi_state == KUMI_STATE_PRE) (void)kumi_registry_open(0);
        if (!once) {
            once = 1;
            kumi_mpit_pvar_setup();
        }
    }
    kumi_mpit_refcount++;
    kumi_mpit_cat_refresh();
    if (provided) {
        int lv = required;
        if (lv != MPI_THREAD_SINGLE && lv != MPI_THREAD_FUNNELED && lv != MPI_THREAD_SERIALIZED)
            lv = MPI_THREAD_MULTIPLE;         /* thread safe at every level */
        *provided = lv;
    }
    pthread_mutex_unlock(&kumi_mpit_mutex);
    return MPI_SUCCESS;
}

int kumi_mpi_t_finalize(void)
{
    MPIT_ENTER();
    if (--kumi_mpit_refcount == 0) {
        /* the handles of this initialization are gone (MPI 4.1 sec. 15.3.4) */
        while (cvar_handles) {
            struct cvar_handle *h = cvar_handles;
            cvar_handles = h->next;
            h->magic = 0;
            free(h);
        }
        kumi_mpit_pvar_cleanup();
        kumi_mpit_event_cleanup();
    }
    MPIT_RETURN(MPI_SUCCESS);
}

/* ------------------------------------------------------------ control variables */

static MPI_Datatype cvar_type(enum kumi_param_type t, int *count)
{
    *count = 1;
    switch (t) {
    case KUMI_PARAM_INT: return MPI_LONG_LONG;
    case KUMI_PARAM_SIZE: return sizeof(size_t) == sizeof(unsigned long) ? MPI_UNSIGNED_LONG : MPI_UNSIGNED_LONG_LONG;
    case KUMI_PARAM_BOOL: return MPI_INT;
    case KUMI_PARAM_DOUBLE: return MPI_DOUBLE;
    case KUMI_PARAM_STRING: *count = STRING_COUNT; return MPI_CHAR;
    }
    return MPI_DATATYPE_NULL;
}

int kumi_mpi_t_cvar_get_num(int *num_cvar)
{
    MPIT_ENTER();
    if (!num_cvar) MPIT_RETURN(MPI_T_ERR_INVALID);
    *num_cvar = kumi_param_count();
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype,
                             MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope)
{
    MPIT_ENTER();
    static struct kumi_param_info info;       /* large: not on the stack (the mutex guards it) */
    if (kumi_param_get_info(cvar_index, &info) != MPI_SUCCESS) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    int count;
    kumi_mpit_string(info.fullname, name, name_len);
    if (verbosity) *verbosity = kumi_mpit_verbosity(info.level);
    if (datatype) *datatype = cvar_type(info.type, &count);
    if (enumtype) *enumtype = info.type == KUMI_PARAM_BOOL ? kumi_mpit_bool_enum() : MPI_T_ENUM_NULL;
    kumi_mpit_string(info.help, desc, desc_len);
    if (bind) *bind = MPI_T_BIND_NO_OBJECT;
    if (scope) *scope = info.runtime ? MPI_T_SCOPE_LOCAL : MPI_T_SCOPE_READONLY;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_cvar_get_index(const char *name, int *cvar_index)
{
    MPIT_ENTER();
    if (!name || !cvar_index) MPIT_RETURN(MPI_T_ERR_INVALID);
    int i = kumi_param_index(name);
    if (i < 0) MPIT_RETURN(MPI_T_ERR_INVALID_NAME);
    *cvar_index = i;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)
{
    (void)obj_handle;                     /* every control variable is bound to no object */
    MPIT_ENTER();
    static struct kumi_param_info info;
    if (kumi_param_get_info(cvar_index, &info) != MPI_SUCCESS) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (!handle || !count) MPIT_RETURN(MPI_T_ERR_INVALID);
    struct cvar_handle *h = calloc(1, sizeof *h);
    if (!h) MPIT_RETURN(MPI_T_ERR_MEMORY);
    h->magic = CVAR_MAGIC;
    h->index = cvar_index;
    h->next = cvar_handles;
    cvar_handles = h;
    (void)cvar_type(info.type, count);
    *handle = (MPI_T_cvar_handle)h;
    MPIT_RETURN(MPI_SUCCESS);
}

/* The live handle h, or NULL. */
static struct cvar_handle *cvar_lookup(MPI_T_cvar_handle handle)
{
    for (struct cvar_handle *h = cvar_handles; h; h = h->next)
        if ((MPI_T_cvar_handle)h == handle) return h;
    return NULL;
}

int kumi_mpi_t_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    MPIT_ENTER();
    if (!handle) MPIT_RETURN(MPI_T_ERR_INVALID);
    struct cvar_handle *h = cvar_lookup(*handle);
    if (!h) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    for (struct cvar_handle **pp = &cvar_handles; *pp; pp = &(*pp)->next)
        if (*pp == h) { *pp = h->next; break; }
    h->magic = 0;
    free(h);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    MPIT_ENTER();
    struct cvar_handle *h = cvar_lookup(handle);
    if (!h) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    if (!buf) MPIT_RETURN(MPI_T_ERR_INVALID);
    if (kumi_param_read(h->index, buf, STRING_COUNT) != MPI_SUCCESS) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    MPIT_ENTER();
    struct cvar_handle *h = cvar_lookup(handle);
    if (!h) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    if (!buf) MPIT_RETURN(MPI_T_ERR_INVALID);
    static struct kumi_param_info info;
    if (kumi_param_get_info(h->index, &info) != MPI_SUCCESS) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    if (!info.runtime) MPIT_RETURN(MPI_T_ERR_CVAR_SET_NEVER);
    char text[STRING_COUNT];
    if (info.type == KUMI_PARAM_STRING) {       /* at most count characters */
        size_t n = strnlen(buf, STRING_COUNT - 1);
        memcpy(text, buf, n);
        text[n] = '\0';
        buf = text;
    }
    kumi_lock();                                 /* the library reads the variable under its lock */
    int rc = kumi_param_write(h->index, buf);
    kumi_unlock();
    MPIT_RETURN(rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_T_ERR_CVAR_SET_NEVER);
}

/* ------------------------------------------------------------ enumerations */

#define ENUM_MAGIC 0x4b454e4du
struct mpit_enum {
    uint32_t magic;
    const char *name;
    int n;
    const char *const *items;
};
static const char *const bool_items[] = { "false", "true" };
static const struct mpit_enum bool_enum = { ENUM_MAGIC, "kumi_bool", 2, bool_items };

MPI_T_enum kumi_mpit_bool_enum(void) { return (MPI_T_enum)&bool_enum; }

static const struct mpit_enum *enum_lookup(MPI_T_enum e)
{
    return e == (MPI_T_enum)&bool_enum ? &bool_enum : NULL;
}

int kumi_mpi_t_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    MPIT_ENTER();
    const struct mpit_enum *e = enum_lookup(enumtype);
    if (!e) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    if (num) *num = e->n;
    kumi_mpit_string(e->name, name, name_len);
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name, int *name_len)
{
    MPIT_ENTER();
    const struct mpit_enum *e = enum_lookup(enumtype);
    if (!e) MPIT_RETURN(MPI_T_ERR_INVALID_HANDLE);
    if (index < 0 || index >= e->n) MPIT_RETURN(MPI_T_ERR_INVALID_ITEM);
    if (value) *value = index;
    kumi_mpit_string(e->items[index], name, name_len);
    MPIT_RETURN(MPI_SUCCESS);
}

/* ------------------------------------------------------------ event sources */
/* One: the process's monotonic clock, in nanoseconds, ordered. */

int kumi_mpi_t_source_get_num(int *num_sources)
{
    MPIT_ENTER();
    if (!num_sources) MPIT_RETURN(MPI_T_ERR_INVALID);
    *num_sources = 1;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_source_get_info(int source_index, char *name, int *name_len, char *desc, int *desc_len,
                               MPI_T_source_order *ordering, MPI_Count *ticks_per_second, MPI_Count *max_ticks,
                               MPI_Info *info)
{
    MPIT_ENTER();
    if (source_index != 0) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    kumi_mpit_string("kumi_clock", name, name_len);
    kumi_mpit_string("The process's monotonic clock (nanoseconds); events of the progress engine", desc, desc_len);
    if (ordering) *ordering = MPI_T_SOURCE_ORDERED;
    if (ticks_per_second) *ticks_per_second = 1000000000;
    if (max_ticks) *max_ticks = INT64_MAX;
    if (info) {
        kumi_lock();
        struct kumi_info *d = kumi_info_dup(NULL);
        kumi_unlock();
        if (!d) MPIT_RETURN(MPI_T_ERR_MEMORY);
        *info = kumi_info_handle(d);
    }
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    MPIT_ENTER();
    if (source_index != 0) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (!timestamp) MPIT_RETURN(MPI_T_ERR_INVALID);
    *timestamp = kumi_mpit_now();
    MPIT_RETURN(MPI_SUCCESS);
}
