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
  link) echo "$libs"; exit 0 ;;
esac
if [ $link = yes ]; then
  # shellcheck disable=SC2086
  set -- $cflags "$@" $libs
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
