# ---- common part of mpicc / mpicxx / mpif90 (tools/wrappers/wrapper-body.sh,
# inserted by configure): options, then run or show the compiler command.
show=no
link=yes
for a in "$@"; do
  shift
  case "$a" in
    -show|-showme|--showme) show=cmd; continue ;;
    --showme:compile) show=compile; continue ;;
    --showme:link) show=link; continue ;;
    -compile_info) show=cmd; link=no; continue ;;
    -link_info) show=cmd; continue ;;
    "$optname"=*) compiler=${a#*=}; continue ;;
    -c|-S|-E|-M|-MM) link=no ;;
  esac
  set -- "$@" "$a"
done
case $show in
  compile) echo "$cflags"; exit 0 ;;
  link) echo "$ldflags $libs"; exit 0 ;;
esac
if [ $link = yes ]; then
  # Kumi's library folder comes before the user's arguments (a -L there, such
  # as -L/usr/lib/x86_64-linux-gnu, must not find another MPI's libmpi.so
  # first); the libraries themselves come after the objects that use them.
  # shellcheck disable=SC2086
  set -- $cflags $ldflags "$@" $libs
else
  # shellcheck disable=SC2086
  set -- $cflags "$@"
fi
if [ $show = cmd ]; then
  echo "$compiler" "$@"
  exit 0
fi
# shellcheck disable=SC2086
exec $compiler "$@"
