/* impi_testfhost: the start-up shared by the made-up foreign IMPI
 * implementations of the tests (impi_testhost, impi_testcoll; not
 * installed): IMPI client K with one host of one proc, from the fact sheet
 * (PROTOCOL.md §1, §2). */
#ifndef IMPI_TESTFHOST_H
#define IMPI_TESTFHOST_H

#include <kumi/impi.h>

struct impi_tf_args {
    const char *who;                  /* the program's name, for its messages */
    const char *server;               /* HOST:PORT */
    int rank;                         /* client rank K */
    int timeout_s;
    int datalen;                      /* IMPI_C_DATALEN */
    uint32_t ackmark, hiwater;        /* IMPI_H_ACKMARK, IMPI_H_HIWATER */
    int64_t pid;                      /* IMPI_P_PID of the one proc */
};

/* Connects to the server (AUTH_NONE, IMPI K), announces a host of one proc
 * on a listening socket of its own (labels, DONE), fills *c and *job, then
 * does the dance (sheet §2): connects to every host ranked lower and sends
 * its host rank, accepts every host ranked higher and reads its rank.
 * Returns the connections by host rank (0: none: this host), *myhost this
 * host's rank.  Any failure: "WHO: message" on stderr and exit 1. */
int *impi_tf_start(const struct impi_tf_args *a, struct kumi_impi_client *c, struct kumi_impi_job *job,
                   int *myhost);

#endif
