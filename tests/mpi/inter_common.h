/* inter_common.h: the intercommunicator the inter_* tests work on.
 *
 * WORLD is split into group A = world ranks [0, na) and group B = the rest
 * (na from argv[1], default size/2).  Inside B the local order is reversed
 * (key = -world rank), so local ranks differ from world order.  The leaders
 * are the local rank 0s (A: world 0; B: world size-1); the peer communicator
 * is MPI_COMM_WORLD. */
#ifndef INTER_COMMON_H
#define INTER_COMMON_H
#include "kt.h"

struct inter_env {
    int wrank, wsize;
    int side;               /* 0: group A, 1: group B */
    int na, nb;             /* group sizes */
    int lrank, lsize, rsize;
    MPI_Comm local, inter;
};

/* World rank of local rank r of side s. */
static int inter_world(const struct inter_env *e, int s, int r)
{
    return s == 0 ? r : e->wsize - 1 - r;
}

static void inter_setup(struct inter_env *e, int argc, char **argv)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &e->wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &e->wsize);
    if (e->wsize < 2) KT_FAIL("needs at least 2 processes");
    e->na = argc > 1 ? atoi(argv[1]) : e->wsize / 2;
    if (e->na < 1 || e->na >= e->wsize) KT_FAIL("bad group A size %d", e->na);
    e->nb = e->wsize - e->na;
    e->side = e->wrank >= e->na;
    KT_MPI(MPI_Comm_split(MPI_COMM_WORLD, e->side, e->side ? -e->wrank : e->wrank, &e->local));
    MPI_Comm_rank(e->local, &e->lrank);
    MPI_Comm_size(e->local, &e->lsize);
    KT_EQ_INT(e->lsize, e->side ? e->nb : e->na);
    KT_EQ_INT(inter_world(e, e->side, e->lrank), e->wrank);
    int remote_leader = e->side ? 0 : e->wsize - 1;     /* world rank of the other local rank 0 */
    KT_MPI(MPI_Intercomm_create(e->local, 0, MPI_COMM_WORLD, remote_leader, 42, &e->inter));
    KT_MPI(MPI_Comm_remote_size(e->inter, &e->rsize));
    KT_EQ_INT(e->rsize, e->side ? e->na : e->nb);
}
#endif
