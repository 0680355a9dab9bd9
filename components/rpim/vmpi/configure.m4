dnl rpim/vmpi and p2p/vmpi load the vendor MPI with glibc's dlmopen and redirect
dnl its dlopen imports (ELF GOT slots of x86_64 or aarch64)
AC_MSG_CHECKING([for dlmopen (rpim/vmpi, p2p/vmpi)])
AC_LINK_IFELSE([AC_LANG_PROGRAM([[#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#if !defined(__x86_64__) && !defined(__aarch64__)
#error "GOT redirection written for x86_64 and aarch64 only"
#endif]], [[Lmid_t l; return dlinfo(dlmopen(LM_ID_NEWLM, "x", RTLD_NOW), RTLD_DI_LMID, &l);]])],
  [kumi_vmpi_ok=yes], [kumi_vmpi_ok=no])
AC_MSG_RESULT([$kumi_vmpi_ok])
AS_IF([test "x$kumi_vmpi_ok" = xyes],
  [kumi_why="yes (vendor MPI loaded with dlmopen when started by mpirun.openmpi)"],
  [kumi_want=no; kumi_why="no (needs glibc's dlmopen on x86_64 or aarch64)"])
