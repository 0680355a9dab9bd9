/* libA.so / libB.so of tests/scripts/abi_gotswap.sh: both export who() and
 * who2(), built with -DWHO=1 (libA: the "Open MPI" of the program) and
 * -DWHO=2 (libB: the "MPICH" the plug-in was built against). */
int who(void) { return WHO; }
int who2(void) { return WHO * 10; }
