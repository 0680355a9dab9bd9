/* Dynamic processes, name service: MPI_Publish_name, MPI_Lookup_name,
 * MPI_Unpublish_name (MPI-4.1 sec. 11.4.5).
 *
 * The service is a directory that every process using it can reach:
 * parameter kumi_dpm_name_dir (environment KUMI_DPM_NAME_DIR); empty (the
 * default) means $TMPDIR (else /tmp) + "/kumi-names-<uid>", which every job of
 * the user on this host shares.  A job spanning hosts, or jobs on different
 * hosts, name a directory on a shared file system.  One file per published
 * service, named "s-" + the hex digits of the service name's bytes (so any
 * name is a file name), holding the port name.
 *
 * Publish writes the port name to a private temporary file and link()s it to
 * the service's file: atomic, and exclusive between processes (a name
 * already published is MPI_ERR_SERVICE).  Lookup reads it (MPI_ERR_NAME when
 * no file).  Unpublish removes it when it holds the same port name
 * (MPI_ERR_SERVICE otherwise).  A process removes the names it published and
 * did not unpublish when it exits normally.  The info arguments carry no key
 * Kumi uses (must be valid or MPI_INFO_NULL).  Errors go to the handler of
 * MPI_COMM_SELF (no communicator is involved: kumi_err_handle(NULL, ...)). */
#include <kumi/param.h>
#include "mpi/mpi_front.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SERVICE_MAX 120     /* bytes of a service name (its file name has twice as many digits) */

static const char *name_dir_param;

void kumi_dpm_register_params(void)
{
    kumi_param_register_string("kumi", "dpm", "name_dir", "",
                               "Directory of the name service of MPI_Publish_name / MPI_Lookup_name (shared by "
                               "every job that uses it; on a shared file system for jobs over several hosts); "
                               "empty = $TMPDIR/kumi-names-<uid> (or /tmp/...), shared by the user's jobs on "
                               "this host",
                               KUMI_LEVEL_USER, &name_dir_param);
    kumi_dpm_register_connect_params();
}

/* The names this process published (removed at exit). */
struct pub {
    struct pub *next;
    char *path;
};
static struct pub *published;
static bool exit_hook;
static pid_t publisher;         /* this process (a child it forks that calls exit() removes nothing) */

static void unpublish_at_exit(void)
{
    if (getpid() != publisher) return;
    for (struct pub *p = published; p; p = p->next) unlink(p->path);
}

static int name_dir(char *buf, size_t len, const char *fn)
{
    int n;
    if (name_dir_param && *name_dir_param) {
        n = snprintf(buf, len, "%s", name_dir_param);
    } else {
        const char *t = getenv("TMPDIR");
        n = snprintf(buf, len, "%s/kumi-names-%lu", t && *t ? t : "/tmp", (unsigned long)getuid());
    }
    if (n < 0 || (size_t)n >= len)
        return kumi_error(MPI_ERR_SERVICE, "%s: the name service directory's path is too long", fn);
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return kumi_error(MPI_ERR_SERVICE, "%s: cannot create the name service directory %s: %s", fn, buf,
                          strerror(errno));
    return MPI_SUCCESS;
}

/* Path of the file of service svc. */
static int service_path(const char *svc, char *buf, size_t len, const char *fn)
{
    int rc = name_dir(buf, len, fn);
    if (rc) return rc;
    size_t n = strlen(buf);
    if (n + 3 + 2 * strlen(svc) + 1 > len)
        return kumi_error(MPI_ERR_SERVICE, "%s: the name service directory's path is too long", fn);
    memcpy(buf + n, "/s-", 3);
    n += 3;
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *s = (const unsigned char *)svc; *s; s++) {
        buf[n++] = hex[*s >> 4];
        buf[n++] = hex[*s & 15];
    }
    buf[n] = '\0';
    return MPI_SUCCESS;
}

static int check_service(const char *svc, const char *fn)
{
    if (!svc) return kumi_error(MPI_ERR_ARG, "%s: argument service_name is NULL", fn);
    if (!*svc) return kumi_error(MPI_ERR_ARG, "%s: argument service_name is empty", fn);
    if (strlen(svc) > SERVICE_MAX)
        return kumi_error(MPI_ERR_ARG, "%s: argument service_name is longer than %d characters", fn, SERVICE_MAX);
    return MPI_SUCCESS;
}

static int check_port(const char *port, const char *fn)
{
    if (!port) return kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
    if (!*port) return kumi_error(MPI_ERR_ARG, "%s: argument port_name is empty", fn);
    if (strnlen(port, MPI_MAX_PORT_NAME) >= MPI_MAX_PORT_NAME)
        return kumi_error(MPI_ERR_ARG, "%s: argument port_name is not shorter than MPI_MAX_PORT_NAME (%d)", fn,
                          MPI_MAX_PORT_NAME);
    return MPI_SUCCESS;
}

static int check_info(MPI_Info info, const char *fn)
{
    if (info != MPI_INFO_NULL && !kumi_info_get(info))
        return kumi_error(MPI_ERR_INFO, "%s: argument info (%p) is not a valid info object", fn, (void *)info);
    return MPI_SUCCESS;
}

/* Read the port name of the service file at path: 0, or -1 with errno. */
static int read_port(const char *path, char *port)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got < MPI_MAX_PORT_NAME - 1) {
        ssize_t n = read(fd, port + got, MPI_MAX_PORT_NAME - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    port[got] = '\0';
    return 0;
}

static int do_publish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    static const char fn[] = "MPI_Publish_name";
    char path[4096], tmp[4096 + 64];
    int rc;
    if ((rc = check_service(service_name, fn)) || (rc = check_info(info, fn)) ||
        (rc = check_port(port_name, fn)) || (rc = service_path(service_name, path, sizeof path, fn)))
        return rc;
    static unsigned seq;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), seq++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return kumi_error(MPI_ERR_SERVICE, "%s: cannot write to the name service (%s): %s", fn, tmp,
                          strerror(errno));
    size_t len = strlen(port_name), off = 0;
    while (off < len) {
        ssize_t n = write(fd, port_name + off, len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += (size_t)n;
    }
    int werr = off < len ? errno : 0;
    if (close(fd) != 0 && !werr) werr = errno;
    if (werr) {
        unlink(tmp);
        return kumi_error(MPI_ERR_SERVICE, "%s: cannot write to the name service (%s): %s", fn, tmp,
                          strerror(werr));
    }
    int lerr = link(tmp, path) == 0 ? 0 : errno;
    unlink(tmp);
    if (lerr == EEXIST)
        return kumi_error(MPI_ERR_SERVICE, "%s: service_name \"%s\" is already published", fn, service_name);
    if (lerr)
        return kumi_error(MPI_ERR_SERVICE, "%s: cannot publish service_name \"%s\" (%s): %s", fn, service_name,
                          path, strerror(lerr));
    struct pub *p = malloc(sizeof *p);
    if (p && (p->path = strdup(path))) {
        p->next = published;
        published = p;
        publisher = getpid();
        if (!exit_hook) exit_hook = atexit(unpublish_at_exit) == 0;
    } else {
        free(p);
    }
    return MPI_SUCCESS;
}

static int do_lookup_name(const char *service_name, MPI_Info info, char *port_name)
{
    static const char fn[] = "MPI_Lookup_name";
    char path[4096];
    int rc;
    if ((rc = check_service(service_name, fn)) || (rc = check_info(info, fn))) return rc;
    if (!port_name) return kumi_error(MPI_ERR_ARG, "%s: argument port_name is NULL", fn);
    if ((rc = service_path(service_name, path, sizeof path, fn))) return rc;
    if (read_port(path, port_name) != 0) {
        int e = errno;
        port_name[0] = '\0';
        if (e == ENOENT)
            return kumi_error(MPI_ERR_NAME, "%s: service_name \"%s\" is not published", fn, service_name);
        return kumi_error(MPI_ERR_NAME, "%s: cannot read service_name \"%s\" (%s): %s", fn, service_name, path,
                          strerror(e));
    }
    return MPI_SUCCESS;
}

static int do_unpublish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    static const char fn[] = "MPI_Unpublish_name";
    char path[4096], cur[MPI_MAX_PORT_NAME];
    int rc;
    if ((rc = check_service(service_name, fn)) || (rc = check_info(info, fn)) ||
        (rc = check_port(port_name, fn)) || (rc = service_path(service_name, path, sizeof path, fn)))
        return rc;
    if (read_port(path, cur) != 0)
        return kumi_error(MPI_ERR_SERVICE, "%s: service_name \"%s\" is not published", fn, service_name);
    if (strcmp(cur, port_name))
        return kumi_error(MPI_ERR_SERVICE, "%s: service_name \"%s\" is published with another port_name (\"%s\")",
                          fn, service_name, cur);
    if (unlink(path) != 0 && errno != ENOENT)
        return kumi_error(MPI_ERR_SERVICE, "%s: cannot unpublish service_name \"%s\" (%s): %s", fn, service_name,
                          path, strerror(errno));
    for (struct pub **pp = &published; *pp; pp = &(*pp)->next)
        if (!strcmp((*pp)->path, path)) {
            struct pub *p = *pp;
            *pp = p->next;
            free(p->path);
            free(p);
            break;
        }
    return MPI_SUCCESS;
}

int kumi_mpi_publish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    return kumi_err_handle(NULL, do_publish_name(service_name, info, port_name));
}

int kumi_mpi_lookup_name(const char *service_name, MPI_Info info, char *port_name)
{
    return kumi_err_handle(NULL, do_lookup_name(service_name, info, port_name));
}

int kumi_mpi_unpublish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    return kumi_err_handle(NULL, do_unpublish_name(service_name, info, port_name));
}
