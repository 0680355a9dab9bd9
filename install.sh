#!/bin/bash
# Build Kumi on Debian 12 from a fresh clone and run an MPI program with 4 ranks.
#   ./install.sh            install Debian build dependencies, build, install into ./_install,
#                           compile examples/ring.c with mpicc and run it with mpiexec -n 4
# Env: PREFIX (default ./_install), BUILDDIR (default ./_build), CONFIGURE_FLAGS (extra flags),
#      KUMI_SKIP_APT=1 to skip the package installation.
set -euo pipefail
top=$(cd "$(dirname "$0")" && pwd)
PREFIX=${PREFIX:-$top/_install}
BUILDDIR=${BUILDDIR:-$top/_build}
pkgs=(build-essential autoconf automake libtool pkg-config python3 libltdl-dev libelf-dev
      libhwloc-dev libfabric-dev gfortran libpmix-dev openssh-client liburing-dev)
if [ "${KUMI_SKIP_APT:-0}" != 1 ]; then
    missing=()
    for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
        echo "== installing Debian packages: ${missing[*]}"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
fi
echo "== building Kumi in $BUILDDIR, installing into $PREFIX"
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || ./autogen.sh > /dev/null 2>&1
mkdir -p "$BUILDDIR"
cd "$BUILDDIR"
if [ ! -f config.status ] || [ "$top/configure" -nt config.status ]; then
    "$top/configure" --prefix="$PREFIX" ${CONFIGURE_FLAGS:-} > configure.out || { cat configure.out; exit 1; }
    sed -n '/configuration summary/,$p' configure.out
fi
make -j"$(nproc)" > make.out 2>&1 || { tail -40 make.out; exit 1; }
make install > install.out 2>&1 || { tail -40 install.out; exit 1; }
echo "== running examples/ring.c with 4 ranks"
mkdir -p "$BUILDDIR/examples"
"$PREFIX/bin/mpicc" -O2 -o "$BUILDDIR/examples/ring" "$top/examples/ring.c"
"$PREFIX/bin/mpiexec" -n 4 "$BUILDDIR/examples/ring"
echo "== done: add $PREFIX/bin to PATH to use mpicc, mpiexec and kumi_info"
