/* sess_fail_exit: a sessions-only program whose rank 1 fails (exit 3) after
 * finalizing its session, while rank 0 is still busy: rank 1 must leave at
 * once (the job barrier at exit is for processes that end well), so the
 * launcher stops the job at once (tests/scripts/sess_fail_exit.sh). */
#include "kt.h"
#include <unistd.h>

int main(void)
{
    MPI_Session s;
    MPI_Group g;
    MPI_Comm c;
    int rank;
    KT_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    KT_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    KT_MPI(MPI_Comm_create_from_group(g, "sess_fail_exit", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MPI_Comm_rank(c, &rank);
    KT_MPI(MPI_Barrier(c));
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    KT_MPI(MPI_Session_finalize(&s));
    if (rank == 1) exit(3);
    sleep(60);
    return 0;
}
