/* Sessions only (no MPI_Init): process sets, a communicator from
 * mpi://WORLD and one from mpi://SELF, an Allreduce on each. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
    fputc('\n', stderr); exit(1); } while (0)
#define CHK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) FAIL("%s returned %d", #call, rc_); } while (0)

int main(void)
{
    MPI_Session s;
    CHK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    int flag = 1;
    MPI_Initialized(&flag);
    if (flag) FAIL("MPI_Initialized is true with only a session");
    int np = 0, found_world = 0, found_self = 0;
    CHK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &np));
    if (np < 2) FAIL("%d process sets", np);
    for (int i = 0; i < np; i++) {
        int len = 0;
        CHK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        char *name = malloc((size_t)len);
        CHK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        if (!strcmp(name, "mpi://WORLD")) found_world = 1;
        if (!strcmp(name, "mpi://SELF")) found_self = 1;
        free(name);
    }
    if (!found_world || !found_self) FAIL("mpi://WORLD or mpi://SELF missing");
    MPI_Info pinfo;
    char val[64];
    CHK(MPI_Session_get_pset_info(s, "mpi://WORLD", &pinfo));
    CHK(MPI_Info_get(pinfo, "mpi_size", sizeof val - 1, val, &flag));
    if (!flag) FAIL("no mpi_size for mpi://WORLD");
    int wsize = atoi(val);
    MPI_Info_free(&pinfo);

    MPI_Group g;
    CHK(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    MPI_Comm c;
    CHK(MPI_Comm_create_from_group(g, "org.kumi.test.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int me, n, sum = 0;
    CHK(MPI_Comm_rank(c, &me));
    CHK(MPI_Comm_size(c, &n));
    if (n != wsize) FAIL("size %d, mpi_size %d", n, wsize);
    CHK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c));
    if (sum != n * (n - 1) / 2) FAIL("Allreduce gave %d, expected %d", sum, n * (n - 1) / 2);
    /* a second communicator from the same group, another tag */
    MPI_Comm c2;
    CHK(MPI_Comm_create_from_group(g, "org.kumi.test.world2", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c2));
    int one = 1, cnt = 0;
    CHK(MPI_Allreduce(&one, &cnt, 1, MPI_INT, MPI_SUM, c2));
    if (cnt != n) FAIL("count %d, expected %d", cnt, n);
    MPI_Comm_free(&c2);

    MPI_Group gs;
    MPI_Comm cs;
    CHK(MPI_Group_from_session_pset(s, "mpi://SELF", &gs));
    CHK(MPI_Comm_create_from_group(gs, "org.kumi.test.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &cs));
    int ss;
    CHK(MPI_Comm_size(cs, &ss));
    if (ss != 1) FAIL("self size %d", ss);
    if (MPI_Group_from_session_pset(s, "mpi://NOWHERE", &gs) == MPI_SUCCESS) FAIL("unknown pset accepted");
    MPI_Comm_free(&cs);
    MPI_Group_free(&gs);
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    CHK(MPI_Session_finalize(&s));
    if (s != MPI_SESSION_NULL) FAIL("session handle not reset");
    return 0;
}
