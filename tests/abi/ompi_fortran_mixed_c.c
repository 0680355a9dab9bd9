/* The C part of ompi_fortran_mixed.f90 (built with mpicc.openmpi): it receives Fortran
 * integer handles from Fortran and converts them with MPI_X_f2c, and hands C handles back
 * with MPI_X_c2f, which must agree with the Fortran library's values (MPI_COMM_WORLD is 0
 * in Open MPI's mpif.h, Kumi's own integer is another), and converts a status to its Fortran
 * forms and back. */
#include <mpi.h>

void cside_(MPI_Fint *fcomm, MPI_Fint *size, MPI_Fint *fworld, MPI_Fint *finteger, MPI_Fint *fsum,
            MPI_Fint *fback, MPI_Fint *ok)
{
    MPI_Comm c = MPI_Comm_f2c(*fcomm);
    *ok = MPI_Comm_size(c, size) == MPI_SUCCESS;
    *fworld = MPI_Comm_c2f(MPI_COMM_WORLD);
    *finteger = MPI_Type_c2f(MPI_INTEGER);
    *fsum = MPI_Op_c2f(MPI_SUM);
    *fback = MPI_Comm_c2f(c);
    int r = -1, s = 0;
    MPI_Comm_rank(c, &r);
    /* a C collective on the communicator Fortran gave, with C's own datatype and op */
    MPI_Allreduce(&r, &s, 1, MPI_INT, MPI_SUM, c);
    *ok = *ok && s == *size * (*size - 1) / 2;
    /* a status through its Fortran forms: MPI_Status_c2f / f2c (MPICH: MPI_Status_c2f08 / f082c
     * of its Fortran library too) */
    MPI_Status st, back;
    MPI_Fint fst[sizeof(MPI_Status) / sizeof(MPI_Fint)];
    int x = r, y = -1;
    *ok = *ok && MPI_Sendrecv(&x, 1, MPI_INT, 0, 9, &y, 1, MPI_INT, 0, 9, MPI_COMM_SELF, &st) == MPI_SUCCESS;
    *ok = *ok && MPI_Status_c2f(&st, fst) == MPI_SUCCESS && MPI_Status_f2c(fst, &back) == MPI_SUCCESS &&
          back.MPI_TAG == 9 && back.MPI_SOURCE == 0 && y == r;
#ifdef MPICH_VERSION
    MPI_F08_status f8;
    back.MPI_TAG = -1;
    *ok = *ok && MPI_Status_c2f08(&st, &f8) == MPI_SUCCESS && f8.MPI_TAG == 9 && f8.MPI_SOURCE == 0 &&
          MPI_Status_f082c(&f8, &back) == MPI_SUCCESS && back.MPI_TAG == 9;
#endif
}
