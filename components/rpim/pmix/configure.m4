dnl rpim/pmix (processes started by srun --mpi=pmix or another PMIx launcher) needs OpenPMIx
AS_IF([test "x$have_pmix" = xyes],
  [kumi_why="yes (PMIx $kumi_pmix_version: srun --mpi=pmix)"],
  [kumi_want=no; kumi_why="no (PMIx not found; Debian: libpmix-dev; ranks started by srun --mpi=pmix will refuse to start)"])
