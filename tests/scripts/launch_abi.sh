#!/bin/bash
# launch_abi: mpiexec picks the MPI ABI from the program's DT_NEEDED (issue 17
# item 5).  Programs that need no MPI but are linked against empty stub
# libraries named libmpi.so.40, libmpich.so.12, libmpi.so.1, ... print their
# KUMI_ABI and LD_LIBRARY_PATH; fake shims live in KUMI_ABI_DIR.  Checked:
# auto-detection (Open MPI, MPICH, standard, Kumi's own libmpi.so.0, none),
# transitively through a library; the shim folder first in LD_LIBRARY_PATH
# (also before -x's value); unsupported ABIs (libmpi.so.1, libmpi.so.20,
# libmpich.so.3, a libmpi.so.0 that is not Kumi's, Open MPI and MPICH mixed without the GOT swap agent: abi_mix.sh runs them with it)
# and missing shims refused before any rank starts, with the message naming
# the library; --abi and KUMI_ABI (the option wins).
set -u
: "${MPIEXEC:?}"
: "${MPICC:?}"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset KUMI_ABI LD_LIBRARY_PATH
export KUMI_ABI_DIR=$tmp/abi
cc=${CC:-cc}
cd "$tmp" || exit 1
mkdir -p lib other abi/ompi abi/mpich abi/standard empty

n=0
stub() { # folder name [link args]: an empty shared library with that soname
    local dir=$1 name=$2; shift 2
    n=$((n + 1))
    echo "int kumi_test_stub_$n(void) { return $n; }" > "s$n.c"
    $cc -shared -fPIC -o "$dir/$name" -Wl,-soname,"$name" "s$n.c" -Wl,--no-as-needed "$@" ||
        fail "cannot build stub $dir/$name"
}
for l in libmpi.so.40 libmpi_mpifh.so.40 libmpich.so.12 libmpi.so.12 libmpi.so.1 libmpi.so.20 libmpich.so.3 \
         libmpi_abi.so.1; do
    stub lib $l
done
stub other libmpi.so.0                      # Open MPI 1.x's name, without kumi_abi_MPI_Init
mkdir kumi0 && echo 'int kumi_abi_MPI_Init(void) { return 0; }' > k.c &&   # one with it
    $cc -shared -fPIC -o kumi0/libmpi.so.0 -Wl,-soname,libmpi.so.0 k.c || fail "cannot build kumi0/libmpi.so.0"
# a library linked against libmpi.so.40, and one linked against that one
stub lib libwrap.so -L"$tmp/lib" -l:libmpi.so.40 -Wl,-rpath,"$tmp/lib"
stub lib libwrap2.so -L"$tmp/lib" -l:libwrap.so -Wl,-rpath,"$tmp/lib"
stub lib libwrapold.so -L"$tmp/lib" -l:libmpi.so.1 -Wl,-rpath,"$tmp/lib"
# the fake shims
stub abi/ompi libmpi.so.40
stub abi/mpich libmpich.so.12
stub abi/standard libmpi_abi.so.1

cat > prog.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    const char *a = getenv("KUMI_ABI"), *l = getenv("LD_LIBRARY_PATH"), *p = getenv("LD_PRELOAD");
    printf("abi=%s ldpath=%s%s%s\n", a ? a : "unset", l ? l : "unset", p ? " preload=" : "", p ? p : "");
    return 0;
}
EOF
# where: prints the file its libmpi.so.40 / libmpich.so.12 was loaded from
cat > where.c <<'EOF'
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>
static int cb(struct dl_phdr_info *i, size_t n, void *d)
{
    (void)n; (void)d;
    const char *b = strrchr(i->dlpi_name, '/');
    if (b && (!strcmp(b, "/libmpi.so.40") || !strcmp(b, "/libmpich.so.12"))) printf("loaded %s\n", i->dlpi_name);
    return 0;
}
int main(void) { dl_iterate_phdr(cb, NULL); return 0; }
EOF
build() { # name libraries...
    local out=$1; shift
    $cc -o "$out" prog.c -Wl,--no-as-needed -L"$tmp/lib" "$@" -Wl,-rpath,"$tmp/lib" || fail "cannot build $out"
}
build plain
build ompi -l:libmpi.so.40
build ompif -l:libmpi_mpifh.so.40 -l:libmpi.so.40
build mpich -l:libmpich.so.12
build impi -l:libmpi.so.12
build std -l:libmpi_abi.so.1
build old -l:libmpi.so.1
build ompi3 -l:libmpi.so.20
build mpich2 -l:libmpich.so.3
build mixed -l:libmpi.so.40 -l:libmpich.so.12
build trans -l:libwrap2.so
# $ORIGIN of the program's real path: bin/orig is a link to ./orig, whose
# RUNPATH $ORIGIN/olib holds libwrapo.so, linked against libmpi.so.40
mkdir olib bin && stub olib libwrapo.so -L"$tmp/lib" -l:libmpi.so.40 -Wl,-rpath,"$tmp/lib"
$cc -o orig prog.c -Wl,--no-as-needed -L"$tmp/olib" -l:libwrapo.so -Wl,-rpath,'$ORIGIN/olib' || fail "cannot build orig"
ln -s ../orig bin/orig
build transold -l:libwrapold.so
# DT_RPATH (not RUNPATH): it comes before LD_LIBRARY_PATH, which may name
# Kumi's own folder (the build tree's libtool wrapper of mpiexec sets it)
build ompi1 -L"$tmp/other" -l:libmpi.so.0 -Wl,--disable-new-dtags,-rpath,"$tmp/other"
# the real library on a DT_RPATH: LD_LIBRARY_PATH would lose, the shim is preloaded
build ompirp -l:libmpi.so.40 -Wl,--disable-new-dtags
readelf -d ompirp | grep -q '(RPATH)' || fail "ompirp has no DT_RPATH"
for v in "" rp; do
    $cc -o where$v where.c -Wl,--no-as-needed -L"$tmp/lib" -l:libmpi.so.40 ${v:+-Wl,--disable-new-dtags} \
        -Wl,-rpath,"$tmp/lib" || fail "cannot build where$v"
done
build kumi0p -L"$tmp/kumi0" -l:libmpi.so.0 -Wl,--disable-new-dtags,-rpath,"$tmp/kumi0"
readelf -d ompi1 | grep -q '(RPATH)' || fail "ompi1 has no DT_RPATH"
# shellcheck disable=SC2086
$MPICC -o kumi prog.c -Wl,--no-as-needed -lmpi || fail "cannot build kumi (MPICC)"
readelf -d ompi | grep -q 'NEEDED.*libmpi\.so\.40' || fail "the test program does not need libmpi.so.40"
readelf -d kumi | grep -q 'NEEDED.*libmpi\.so\.0' || fail "the Kumi program does not need libmpi.so.0"
printf '#!/bin/sh\necho "abi=${KUMI_ABI:-unset} script"\n' > script.sh
chmod +x script.sh

# expect_run LINE [VAR=VALUE...] -- mpiexec args: each of the ranks prints LINE
expect_run() {
    local want=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$MPIEXEC" "$@" > o 2> e < /dev/null
    local rc=$?
    [ $rc -eq 0 ] || { cat o e; fail "${envs[*]} mpiexec $* exited $rc"; }
    local np; np=$(grep -c . o)
    [ "$np" -ge 1 ] && [ "$(grep -cxF -- "$want" o)" -eq "$np" ] ||
        { cat o e; fail "${envs[*]} mpiexec $*: ranks do not print '$want'"; }
    echo "ok: ${envs[*]} mpiexec $* -> $want"
}
# expect_refused REGEX [VAR=VALUE...] -- mpiexec args: exit 1, message, no rank started
expect_refused() {
    local re=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$MPIEXEC" "$@" > o 2> e < /dev/null
    local rc=$?
    [ $rc -eq 1 ] || { cat o e; fail "${envs[*]} mpiexec $*: exit $rc, expected 1 (refused)"; }
    [ -s o ] && fail "${envs[*]} mpiexec $*: started ranks: $(head -3 o)"
    grep -Eq -- "$re" e || { cat e; fail "${envs[*]} mpiexec $*: message does not match /$re/"; }
    [ "$(grep -vc "^Try 'mpiexec --help'" e)" -eq 1 ] || { cat e; fail "${envs[*]} mpiexec $*: more than one line"; }
    echo "ok: ${envs[*]} mpiexec $* refused: $(head -1 e)"
}
# The LD_LIBRARY_PATH ranks get without a shim (in the build tree $MPIEXEC
# may be a libtool wrapper that sets one): "" when none
noshim() {
    local l; l=$(env "$@" "$MPIEXEC" -n 1 ./plain < /dev/null) || fail "mpiexec ./plain failed"
    l=${l#*ldpath=}
    [ "$l" = unset ] || printf '%s' "$l"
}
B=$(noshim)
Bxy=$(noshim LD_LIBRARY_PATH=/x:/y)
Bx=$(noshim LD_LIBRARY_PATH=/x)
case "$Bxy" in *"/x:/y") ;; *) fail "LD_LIBRARY_PATH=/x:/y does not reach the ranks ($Bxy)" ;; esac
O="$tmp/abi/ompi${B:+:$B}" M="$tmp/abi/mpich${B:+:$B}" S="$tmp/abi/standard${B:+:$B}" U=${B:-unset}
q() { printf '%s' "$1" | sed 's/[][\.*^$()+?{}|/]/\\&/g'; }   # a literal in a regex

# --- detection
expect_run "abi=ompi ldpath=$O" -- -n 2 ./ompi
expect_run "abi=ompi ldpath=$tmp/abi/ompi:$Bxy" LD_LIBRARY_PATH=/x:/y -- -n 2 ./ompi
expect_run "abi=ompi ldpath=$tmp/abi/ompi:/z" LD_LIBRARY_PATH=/x -- -n 2 -x LD_LIBRARY_PATH=/z ./ompi
expect_run "abi=ompi ldpath=$O" PATH="$tmp:$PATH" -- -n 2 ompi        # found in PATH
expect_run "abi=mpich ldpath=$M" -- -n 3 ./mpich
expect_run "abi=standard ldpath=$U" -- -n 2 ./kumi                   # Kumi's libmpi.so.0
expect_run "abi=standard ldpath=$S" -- -n 2 ./std        # libmpi_abi.so.1
expect_run "abi=standard ldpath=$U" -- -n 2 ./kumi0p     # a libmpi.so.0 with kumi_abi_MPI_Init
expect_run "abi=unset ldpath=$U" -- -n 2 ./plain                      # no MPI: as is
expect_run "abi=unset ldpath=$Bx" KUMI_ABI=auto LD_LIBRARY_PATH=/x -- -n 2 ./plain
expect_run "abi=unset script" -- -n 2 ./script.sh                        # not ELF: as is
expect_run "abi=ompi ldpath=$O preload=$tmp/abi/ompi/libmpi.so.40" -- -n 2 ./ompirp
expect_run "abi=ompi ldpath=$O preload=$tmp/abi/ompi/libmpi.so.40:/p.so" LD_PRELOAD=/p.so -- -n 2 ./ompirp
# the ranks load the shim, not the library the program was linked against
expect_run "loaded $tmp/abi/ompi/libmpi.so.40" -- -n 2 ./where
expect_run "loaded $tmp/abi/ompi/libmpi.so.40" -- -n 2 ./whererp
expect_run "loaded $tmp/lib/libmpi.so.40" -- -n 1 --abi mpich ./whererp     # (not the shim of another ABI)
# transitively: trans -> libwrap2.so -> libwrap.so -> libmpi.so.40
expect_run "abi=ompi ldpath=$O" -- -n 2 ./trans
expect_run "abi=ompi ldpath=$O" -- -n 2 bin/orig
KUMI_VERBOSE=1 "$MPIEXEC" -n 1 ./trans > o 2> e < /dev/null || { cat e; fail "verbose trans failed"; }
grep -q "ABI ompi, libmpi.so.40 (through $tmp/lib/libwrap.so)" e || { cat e; fail "verbose: no 'through libwrap.so'"; }
echo "ok: KUMI_VERBOSE=1 says the ABI and through which library"

# --- unsupported ABIs: refused before any rank starts
prov='ABIs provided: standard \(MPI 5\.0 ABI: libmpi\.so\.0, libmpi_abi\.so\.1\), ompi \(Open MPI 4\.x: libmpi\.so\.40\), mpich \(MPICH 4\.x: libmpich\.so\.12\)'
expect_refused "^mpiexec: \./old needs libmpi\.so\.1, the library of an MPI whose ABI Kumi does not provide \($prov; --abi overrides\)$" -- -n 2 ./old
expect_refused "^mpiexec: \./ompi3 needs libmpi\.so\.20, the library of an MPI whose ABI" -- -n 2 ./ompi3
expect_refused "^mpiexec: \./mpich2 needs libmpich\.so\.3, the library of an MPI whose ABI" -- -n 2 ./mpich2
expect_refused "^mpiexec: \./transold needs libmpi\.so\.1 \(through $(q "$tmp")/lib/libwrapold\.so\), the library" -- -n 2 ./transold
expect_refused "^mpiexec: \./ompi1 needs libmpi\.so\.0, found at $(q "$tmp")/other/libmpi\.so\.0, is not Kumi's, the library" -- -n 2 ./ompi1
expect_refused "^mpiexec: \./mixed needs both Open MPI's libmpi\.so\.40 and MPICH's libmpich\.so\.12; Kumi runs such a process through both shims and its GOT swap agent, but $(q "$tmp")/abi/libkumi_abimix\.so is missing" -- -n 2 ./mixed
# only the ABIs whose shim is there are named
expect_refused "ABIs provided: standard \(MPI 5\.0 ABI: libmpi\.so\.0, libmpi_abi\.so\.1\); --abi overrides" \
    KUMI_ABI_DIR="$tmp/empty" -- -n 2 ./old

# --- missing shims
expect_refused "^mpiexec: \./ompi is an Open MPI 4\.x binary \(libmpi\.so\.40\), but this Kumi has no Open MPI 4\.x shim \($(q "$tmp")/empty/ompi/libmpi\.so\.40 missing\)$" \
    KUMI_ABI_DIR="$tmp/empty" -- -n 2 ./ompi
expect_refused "^mpiexec: \./mpich is an MPICH 4\.x binary \(libmpich\.so\.12\), but this Kumi has no MPICH 4\.x shim \($(q "$tmp")/empty/mpich/libmpich\.so\.12 missing\)$" \
    KUMI_ABI_DIR="$tmp/empty" -- -n 2 ./mpich
expect_refused "^mpiexec: \./ompif is an Open MPI 4\.x binary \(libmpi_mpifh\.so\.40\), but this Kumi has no Open MPI 4\.x shim for libmpi_mpifh\.so\.40 \($(q "$tmp")/abi/ompi/libmpi_mpifh\.so\.40 missing\)$" -- -n 2 ./ompif
expect_refused "^mpiexec: \./impi is an MPICH 4\.x binary \(libmpi\.so\.12\), but this Kumi has no MPICH 4\.x shim for libmpi\.so\.12" -- -n 2 ./impi
expect_refused "^mpiexec: \./std is a standard-ABI binary \(libmpi_abi\.so\.1\), but this Kumi has no libmpi_abi\.so\.1 \($(q "$tmp")/empty/standard/libmpi_abi\.so\.1 missing\)$" \
    KUMI_ABI_DIR="$tmp/empty" -- -n 2 ./std
expect_refused "^mpiexec: --abi ompi: this Kumi has no Open MPI 4\.x shim \($(q "$tmp")/empty/ompi/libmpi\.so\.40 missing\)$" \
    KUMI_ABI_DIR="$tmp/empty" -- -n 2 --abi ompi ./plain
expect_refused "^mpiexec: KUMI_ABI ompi: this Kumi has no Open MPI 4\.x shim" KUMI_ABI=ompi KUMI_ABI_DIR="$tmp/empty" -- -n 2 ./plain
# once the shim is there, they run
cp lib/libmpi_mpifh.so.40 abi/ompi/ && ln -s libmpich.so.12 abi/mpich/libmpi.so.12
expect_run "abi=ompi ldpath=$O" -- -n 2 ./ompif
expect_run "abi=mpich ldpath=$M" -- -n 2 ./impi

# --- --abi and KUMI_ABI (interpreters; override)
expect_run "abi=ompi ldpath=$O" -- -n 2 --abi ompi ./plain
expect_run "abi=mpich ldpath=$M" -- -n 2 --abi=mpich ./plain
expect_run "abi=mpich ldpath=$M" KUMI_ABI=mpich -- -n 2 ./plain
expect_run "abi=ompi ldpath=$O" KUMI_ABI=mpich -- -n 2 --abi ompi ./plain    # the option wins
expect_run "abi=ompi ldpath=$O" KUMI_ABI=mpich -- -n 2 --abi auto ./ompi     # auto: detect
expect_run "abi=ompi ldpath=$O" -- -n 2 --abi ompi ./old      # override of an unsupported one
expect_run "abi=mpich ldpath=$M" -- -n 2 --abi mpich ./ompi  # override of the detection
expect_run "abi=standard ldpath=$S" -- -n 2 --abi standard ./plain
expect_run "abi=standard ldpath=$U" KUMI_ABI_DIR="$tmp/empty" -- -n 2 --abi standard ./plain
expect_run "abi=ompi script" -- -n 2 --abi ompi ./script.sh
expect_refused "^mpiexec: --abi: expected ompi, mpich, ompi\+mpich, standard or auto, not 'openmpi'$" -- -n 2 --abi openmpi ./plain
expect_refused "^mpiexec: KUMI_ABI: expected ompi, mpich, ompi\+mpich, standard or auto, not 'x'$" KUMI_ABI=x -- -n 2 ./plain
"$MPIEXEC" --help | grep -q -- '--abi A' || fail "--help does not document --abi"
echo "ok: --help documents --abi"
exit 0
