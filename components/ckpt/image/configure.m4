dnl ckpt/image saves x86_64 Linux processes; kumi_restart is a static program (libc.a: Debian libc6-dev)
AS_CASE([`uname -m`-`uname -s`],
  [x86_64-Linux], [
    kumi_save_LIBS=$LIBS; LIBS="-static $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>]], [[puts("x");]])],
      [kumi_why="yes (kumi_restart)"], [kumi_want=no; kumi_why="no (cannot link a static program: libc.a missing)"])
    LIBS=$kumi_save_LIBS],
  [kumi_want=no; kumi_why="no (x86_64 Linux only)"])
