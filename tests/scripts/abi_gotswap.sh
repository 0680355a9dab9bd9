#!/bin/bash
# abi_gotswap: libkumi_gotswap.so (components/abi/gotswap) rewrites the GOT of
# loaded objects so that two objects importing the same name reach different
# definitions: a program linked against libA.so (who() = 1) dlopens a plug-in
# linked against libB.so (who() = 2); the loader binds the plug-in's who() to
# libA's, the swap makes it reach libB's while the program keeps libA's
# (tests/gotswap/prog.c runs one scenario per process; see its modes).
# Built with cc here, in variants: PIE program with lazy binding, non-PIE
# program (with DT_RPATH instead of DT_RUNPATH), everything -fno-plt -z now (GLOB_DAT slots only, RELRO+BIND_NOW),
# and a plug-in whose section headers were removed (read through PT_DYNAMIC).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
src=$top_srcdir/tests/gotswap
gdir=$top_builddir/components/abi/gotswap
lib=$gdir/.libs/libkumi_gotswap.so
if [ ! -f "$lib" ]; then
    # configure's decision (AM_CONDITIONAL HAVE_LIBELF), else whether libelf is there
    if grep -q '^S\["HAVE_LIBELF_TRUE"\]=""' "$top_builddir/config.status" 2>/dev/null ||
       { [ ! -f "$top_builddir/config.status" ] && pkg-config --exists libelf 2>/dev/null; }; then
        echo "FAIL: configure found libelf but $lib was not built"; exit 1
    fi
    echo "SKIP: configured without libelf: libkumi_gotswap.so is not built"; exit 77
fi
[ "$(uname -m)" = x86_64 ] || [ "$(uname -m)" = aarch64 ] || { echo "SKIP: $(uname -m)"; exit 77; }
CC=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nfail=0
fail() { echo "FAIL: $*"; nfail=$((nfail + 1)); }

# Removes the section headers of an ELF64 file (e_shoff, e_shnum, e_shstrndx = 0):
# the loader does not need them, gotswap must not either.
drop_sections() {
    python3 - "$1" <<'EOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
assert b[:4] == b'\x7fELF' and b[4] == 2
struct.pack_into('<Q', b, 0x28, 0)          # e_shoff
struct.pack_into('<HHH', b, 0x3a, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
open(p, 'wb').write(b)
EOF
}

build() {   # build VARIANT: into $tmp/VARIANT/{prog,lib/}
    local v=$1 d=$tmp/$1 libf="-fPIC" progf="" ldf="" plugf=""
    case $v in
        pie) progf="-fPIE -pie" ;;
        nopie) progf="-fno-pie -no-pie -Wl,--disable-new-dtags"       # DT_RPATH, not DT_RUNPATH
               plugf="-Wl,--disable-new-dtags" ;;
        now) libf="-fPIC -fno-plt"; progf="-fPIE -pie -fno-plt"; ldf="-Wl,-z,now -Wl,-z,relro" ;;
        noshdr) progf="-fPIE -pie" ;;
    esac
    mkdir -p "$d/lib/sub"
    # shellcheck disable=SC2086,SC2016
    {
        $CC -O1 -shared $libf $ldf -DWHO=1 -Wl,-soname,libA.so -o "$d/lib/libA.so" "$src/who.c" &&
        $CC -O1 -shared $libf $ldf -DWHO=2 -Wl,-soname,libB.so -o "$d/lib/libB.so" "$src/who.c" &&
        $CC -O1 -shared $libf $ldf -DWHO=5 -Wl,-soname,libextra.so -o "$d/lib/sub/libextra.so" "$src/who.c" &&
        $CC -O1 -shared $libf $ldf $plugf -Wl,--no-as-needed -o "$d/lib/libplug.so" "$src/plug.c" \
            -L"$d/lib" -lB -Wl,-rpath,'$ORIGIN:$ORIGIN/sub' &&
        $CC -O1 -shared $libf $ldf -Wl,--no-as-needed -o "$d/lib/libwrap.so" "$src/wrap.c" \
            -L"$d/lib" -lplug -Wl,-rpath,'$ORIGIN' &&
        $CC -std=gnu11 -O1 -Wall $progf $ldf -Wl,--no-as-needed -I"$top_srcdir/components/abi/gotswap" \
            -DLIBDIR="\"$d/lib\"" -o "$d/prog" "$src/prog.c" -L"$d/lib" -lA \
            -L"$gdir/.libs" -lkumi_gotswap -Wl,-rpath,'$ORIGIN/lib' -Wl,-rpath,"$gdir/.libs" -ldl -lpthread
    } > "$d/cc.log" 2>&1 || { fail "cannot build variant $v:"; sed 's/^/    /' "$d/cc.log"; return 1; }
    if [ "$v" = noshdr ]; then
        drop_sections "$d/lib/libplug.so" && drop_sections "$d/lib/libwrap.so" ||
            { fail "cannot remove the section headers"; return 1; }
    fi
    return 0
}

# what each variant is: checked, so the variants test what they claim
check_variant() {
    local v=$1 d=$tmp/$1
    local ptype; ptype=$(LC_ALL=C readelf -h "$d/prog" | awk '/Type:/ {print $2}')
    case $v in
        nopie) [ "$ptype" = EXEC ] || fail "$v: the program is $ptype, not EXEC"
               LC_ALL=C readelf -dW "$d/prog" | grep -q '(RPATH)' || fail "$v: the program has no DT_RPATH"
               LC_ALL=C readelf -dW "$d/lib/libplug.so" | grep -q '(RPATH)' || fail "$v: libplug.so has no DT_RPATH" ;;
        *) [ "$ptype" = DYN ] || fail "$v: the program is $ptype, not DYN (PIE)" ;;
    esac
    local r; r=$(LC_ALL=C readelf -rW "$d/lib/libplug.so" 2>&1)
    if [ "$v" = now ]; then
        echo "$r" | grep -q 'JUMP_SLO.* who2' && fail "$v: libplug.so still has a JUMP_SLOT for who2"
        echo "$r" | grep -q 'GLOB_DAT.* who2' || fail "$v: libplug.so has no GLOB_DAT for who2"
        LC_ALL=C readelf -dW "$d/lib/libplug.so" | grep -q 'BIND_NOW\|FLAGS.*NOW' || fail "$v: libplug.so not BIND_NOW"
    elif [ "$v" = noshdr ]; then
        LC_ALL=C readelf -hW "$d/lib/libplug.so" | grep -q 'Number of section headers: *0' ||
            fail "$v: libplug.so still has section headers"
    else
        echo "$r" | grep -q 'JUMP_SLO.* who2' || fail "$v: libplug.so has no JUMP_SLOT for who2"
    fi
}

modes="base swap lazy rule ruledep ruledlsym dlmopen replaced nosym noobj badarg main threads"
for v in pie nopie now noshdr; do
    build "$v" || continue
    check_variant "$v"
    for m in $modes; do
        out=$(cd / && TMPDIR=$tmp timeout 60 "$tmp/$v/prog" "$m" 2>&1); rc=$?
        nok=$(printf '%s\n' "$out" | grep -c '^ok: ')
        if [ $rc -ne 0 ] || [ "$nok" -eq 0 ] || printf '%s\n' "$out" | grep -q '^FAIL'; then
            fail "$v $m (exit $rc):"
            printf '%s\n' "$out" | sed 's/^/    /'
        else
            echo "ok: $v $m ($nok checks)"
        fi
    done
done

# A Fortran library loaded at start (the foreign Fortran MPI library case)
FC=${FC:-gfortran}
if command -v "$FC" > /dev/null 2>&1 && [ -d "$tmp/pie/lib" ]; then
    d=$tmp/pie
    # shellcheck disable=SC2016
    if "$FC" -O1 -shared -fPIC -Wl,--no-as-needed -o "$d/lib/libfort.so" "$src/fort.f90" \
            -L"$d/lib" -lB -Wl,-rpath,'$ORIGIN' > "$d/fc.log" 2>&1 &&
       $CC -std=gnu11 -O1 -Wall -DWITH_FORTRAN -Wl,--no-as-needed -I"$top_srcdir/components/abi/gotswap" \
            -DLIBDIR="\"$d/lib\"" -o "$d/prog_f" "$src/prog.c" -L"$d/lib" -lA -lfort \
            -L"$gdir/.libs" -lkumi_gotswap -Wl,-rpath,'$ORIGIN/lib' -Wl,-rpath,"$gdir/.libs" -ldl -lpthread \
            >> "$d/fc.log" 2>&1; then
        out=$(cd / && timeout 60 "$d/prog_f" fortran 2>&1); rc=$?
        if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | grep -q '^ok: ' || printf '%s\n' "$out" | grep -q '^FAIL'; then
            fail "fortran (exit $rc):"; printf '%s\n' "$out" | sed 's/^/    /'
        else
            echo "ok: fortran ($(printf '%s\n' "$out" | grep -c '^ok: ') checks)"
        fi
    else
        fail "cannot build the Fortran library:"; sed 's/^/    /' "$d/fc.log"
    fi
else
    echo "(no $FC: the Fortran library case is not run)"
fi

# The real case: a program built against Open MPI loads a plug-in built against MPICH
if command -v mpicc.openmpi > /dev/null 2>&1 && command -v mpicc.mpich > /dev/null 2>&1; then
    d=$tmp/mix
    mkdir -p "$d"
    if mpicc.mpich -shared -fPIC -o "$d/libmixplug.so" "$src/mix_plug.c" > "$d/cc.log" 2>&1 &&
       mpicc.openmpi -I"$top_srcdir/components/abi/gotswap" -o "$d/mix" "$src/mix_prog.c" \
           -L"$gdir/.libs" -lkumi_gotswap -Wl,-rpath,"$gdir/.libs" -ldl >> "$d/cc.log" 2>&1; then
        out=$(cd / && timeout 60 "$d/mix" "$d/libmixplug.so" 2>&1); rc=$?
        printf '%s\n' "$out" | sed 's/^/    /'
        if [ $rc -eq 0 ] &&
           printf '%s\n' "$out" | grep -q '^program: Open MPI' &&
           printf '%s\n' "$out" | grep -q '^plug-in before: Open MPI' &&
           printf '%s\n' "$out" | grep -q '^swapped: [1-9]' &&
           printf '%s\n' "$out" | grep -q '^plug-in after: MPICH' &&
           printf '%s\n' "$out" | grep -q '^program after: Open MPI'; then
            echo "ok: Open MPI program, MPICH plug-in: the plug-in reaches MPICH after the swap"
        else
            fail "Open MPI program with an MPICH plug-in (exit $rc)"
        fi
    else
        fail "cannot build the Open MPI / MPICH programs:"; sed 's/^/    /' "$d/cc.log"
    fi
else
    echo "(no mpicc.openmpi and mpicc.mpich: the real mixed-MPI case is not run)"
fi

# The library's own API: it exports the kumi_got_* functions only (nothing named
# dlopen: the hook is itself a GOT swap), and the header compiles alone as C and C++.
extra=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^kumi_got_' | grep -v '^_' )
[ -z "$extra" ] && echo "ok: exports kumi_got_* only" || fail "unexpected exports: $extra"
printf '#include "kumi_gotswap.h"\nint main(void){return kumi_got_swap(0,0,0,0)==KUMI_GOT_EINVAL?0:1;}\n' > "$tmp/h.c"
$CC -std=c99 -Wall -Werror -pedantic -I"$top_srcdir/components/abi/gotswap" -o "$tmp/h" "$tmp/h.c" \
    -L"$gdir/.libs" -lkumi_gotswap -Wl,-rpath,"$gdir/.libs" > "$tmp/h.log" 2>&1 && "$tmp/h" ||
    { fail "the header alone (C99):"; sed 's/^/    /' "$tmp/h.log"; }
if command -v c++ > /dev/null 2>&1; then
    cp "$tmp/h.c" "$tmp/h.cc"
    c++ -Wall -Werror -I"$top_srcdir/components/abi/gotswap" -c -o "$tmp/hcc.o" "$tmp/h.cc" > "$tmp/h.log" 2>&1 ||
        { fail "the header in C++:"; sed 's/^/    /' "$tmp/h.log"; }
fi

[ $nfail -eq 0 ] || { echo "$nfail failure(s)"; exit 1; }
echo "all gotswap checks passed"
