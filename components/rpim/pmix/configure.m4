dnl rpim/pmix (processes started by srun --mpi=pmix or another PMIx launcher) needs OpenPMIx
AS_IF([test "x$have_pmix" = xyes],
  [kumi_why="yes (PMIx $kumi_pmix_version: srun --mpi=pmix)"],
  [test "x$with_pmix" = xno],
  [kumi_want=no; kumi_why="no (--without-pmix; ranks started by srun --mpi=pmix will refuse to start)"],
  [kumi_want=no; kumi_why="no (PMIx not found; Debian: libpmix-dev; ranks started by srun --mpi=pmix will refuse to start)"])
