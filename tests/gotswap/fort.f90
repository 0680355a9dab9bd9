! libfort.so: a Fortran library linked against libB.so whose code calls the
! C function who(), as a foreign MPI's Fortran library (libmpi_mpifh.so.40)
! calls its C library.  The program links libA.so first and libfort.so
! (loaded at start), so the loader binds libfort's who() to libA's.
integer(c_int) function fort_who() bind(c, name='fort_who')
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  interface
    integer(c_int) function who() bind(c, name='who')
      import :: c_int
    end function who
  end interface
  fort_who = who()
end function fort_who
