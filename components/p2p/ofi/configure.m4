dnl p2p/ofi needs libfabric's headers only: it dlopen()s libfabric.so.1 when used
AS_IF([test "x$have_libfabric" = xyes],
  [kumi_why="yes (libfabric loaded when used)"],
  [kumi_want=no; kumi_why="no (libfabric headers not found; Debian: libfabric-dev)"])
