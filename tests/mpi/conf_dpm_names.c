/* conf_dpm_names: the name service and ports of dynamic processes (issue 23):
 * MPI_Open_port / MPI_Close_port, MPI_Publish_name / MPI_Lookup_name /
 * MPI_Unpublish_name.
 *
 *   conf_dpm_names            one job: rank 0 opens a port and publishes it
 *                             under a name unique to the run; every rank looks
 *                             it up; a second publish of the name, unpublishing
 *                             with another port, a lookup of an unknown or
 *                             unpublished name and closing a port twice give
 *                             MPI_ERR_SERVICE / MPI_ERR_NAME / MPI_ERR_PORT;
 *                             bad arguments MPI_ERR_ARG / MPI_ERR_INFO with
 *                             messages naming the argument.
 *   conf_dpm_names serve DIR  (tests/scripts/dpm_names_jobs.sh) rank 0 opens a
 *                             port, publishes it as "kumi-xjob", writes it to
 *                             DIR/port and waits for DIR/done; then
 *                             unpublishes and closes.
 *   conf_dpm_names client DIR every rank of another job looks "kumi-xjob" up
 *                             and checks it against DIR/port; rank 0 writes
 *                             DIR/done.
 *   conf_dpm_names leave DIR  rank 0 publishes "kumi-left" and ends without
 *                             unpublishing it (the script checks that it is
 *                             gone); a child it forks that calls exit() does
 *                             not remove it. */
#include "kt.h"
#include <sys/wait.h>
#include <unistd.h>

static void errmsg(int rc, int cls, const char *word)
{
    int c = -1, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Error_class(rc, &c);
    KT_EQ_INT(c, cls);
    MPI_Error_string(rc, s, &len);
    KT_CHECK(strstr(s, word) != NULL, "message '%s' does not name '%s'", s, word);
}

static void one_job(int rank)
{
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME], svc[128], other[MPI_MAX_PORT_NAME];
    int id = (int)getpid();
    MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(svc, sizeof svc, "kumi test/%d: names", id);   /* a '/' and blanks too */
    if (rank == 0) {
        KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
        KT_CHECK(!strncmp(port, "kumi:tcp:", 9), "port name '%s'", port);
        KT_CHECK(strlen(port) < MPI_MAX_PORT_NAME, "port name too long");
        KT_MPI(MPI_Open_port(MPI_INFO_NULL, other));
        KT_CHECK(strcmp(port, other), "two ports with one name '%s'", port);
        KT_MPI(MPI_Close_port(other));
        errmsg(MPI_Close_port(other), MPI_ERR_PORT, "port_name");
        KT_MPI(MPI_Publish_name(svc, MPI_INFO_NULL, port));
    }
    MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    KT_MPI(MPI_Lookup_name(svc, MPI_INFO_NULL, found));
    KT_CHECK(!strcmp(found, port), "looked up '%s', published '%s'", found, port);
    MPI_Barrier(MPI_COMM_WORLD);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == size - 1) {        /* another process than the publisher where there is one */
        errmsg(MPI_Publish_name(svc, MPI_INFO_NULL, "kumi:tcp:1.2.3.4:5:x"), MPI_ERR_SERVICE, svc);
        errmsg(MPI_Unpublish_name(svc, MPI_INFO_NULL, "kumi:tcp:1.2.3.4:5:x"), MPI_ERR_SERVICE, svc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    char unknown[160];
    snprintf(unknown, sizeof unknown, "kumi-never-published-%d", id);
    errmsg(MPI_Lookup_name(unknown, MPI_INFO_NULL, found), MPI_ERR_NAME, unknown);
    if (rank == 0) {
        KT_MPI(MPI_Unpublish_name(svc, MPI_INFO_NULL, port));
        errmsg(MPI_Unpublish_name(svc, MPI_INFO_NULL, port), MPI_ERR_SERVICE, svc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    errmsg(MPI_Lookup_name(svc, MPI_INFO_NULL, found), MPI_ERR_NAME, svc);

    /* bad arguments */
    MPI_Info bad = (MPI_Info)(void *)&id;
    errmsg(MPI_Publish_name(NULL, MPI_INFO_NULL, port), MPI_ERR_ARG, "service_name");
    errmsg(MPI_Publish_name(svc, MPI_INFO_NULL, NULL), MPI_ERR_ARG, "port_name");
    errmsg(MPI_Publish_name(svc, bad, port), MPI_ERR_INFO, "info");
    errmsg(MPI_Lookup_name(NULL, MPI_INFO_NULL, found), MPI_ERR_ARG, "service_name");
    errmsg(MPI_Lookup_name(svc, MPI_INFO_NULL, NULL), MPI_ERR_ARG, "port_name");
    errmsg(MPI_Unpublish_name("", MPI_INFO_NULL, port), MPI_ERR_ARG, "service_name");
    errmsg(MPI_Open_port(MPI_INFO_NULL, NULL), MPI_ERR_ARG, "port_name");
    errmsg(MPI_Open_port(bad, found), MPI_ERR_INFO, "info");
    errmsg(MPI_Close_port(NULL), MPI_ERR_ARG, "port_name");
    if (rank == 0) KT_MPI(MPI_Close_port(port));
}

static void wait_file(const char *path)
{
    for (int i = 0; i < 1200 && access(path, F_OK) != 0; i++) usleep(50000);
    KT_CHECK(access(path, F_OK) == 0, "%s did not appear", path);
}

int main(int argc, char **argv)
{
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[4096], port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME];
    if (argc < 3) {
        one_job(rank);
    } else if (!strcmp(argv[1], "serve")) {
        if (rank == 0) {
            KT_MPI(MPI_Open_port(MPI_INFO_NULL, port));
            KT_MPI(MPI_Publish_name("kumi-xjob", MPI_INFO_NULL, port));
            snprintf(path, sizeof path, "%s/port.tmp", argv[2]);
            FILE *f = fopen(path, "w");
            KT_CHECK(f != NULL, "cannot write %s", path);
            fputs(port, f);
            fclose(f);
            char final[4096];
            snprintf(final, sizeof final, "%s/port", argv[2]);
            rename(path, final);
            snprintf(path, sizeof path, "%s/done", argv[2]);
            wait_file(path);
            KT_MPI(MPI_Unpublish_name("kumi-xjob", MPI_INFO_NULL, port));
            KT_MPI(MPI_Close_port(port));
        }
    } else if (!strcmp(argv[1], "leave")) {
        if (rank == 0) {
            KT_MPI(MPI_Publish_name("kumi-left", MPI_INFO_NULL, "kumi:tcp:127.0.0.1:1:left"));
            pid_t pid = fork();
            if (pid == 0) exit(0);
            int st;
            waitpid(pid, &st, 0);
            KT_MPI(MPI_Lookup_name("kumi-left", MPI_INFO_NULL, found));
            KT_CHECK(!strcmp(found, "kumi:tcp:127.0.0.1:1:left"), "looked up '%s'", found);
        }
    } else {
        snprintf(path, sizeof path, "%s/port", argv[2]);
        wait_file(path);
        FILE *f = fopen(path, "r");
        KT_CHECK(f && fgets(port, sizeof port, f), "cannot read %s", path);
        fclose(f);
        KT_MPI(MPI_Lookup_name("kumi-xjob", MPI_INFO_NULL, found));
        KT_CHECK(!strcmp(found, port), "looked up '%s', the other job published '%s'", found, port);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            snprintf(path, sizeof path, "%s/done", argv[2]);
            f = fopen(path, "w");
            if (f) fclose(f);
        }
    }
    KT_MPI(MPI_Finalize());
    if (rank == 0) printf("conf_dpm_names: ok\n");
    return 0;
}
