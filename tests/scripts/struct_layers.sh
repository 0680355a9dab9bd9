#!/bin/bash
# libmpi's layers (README "Architecture"): no #include of a higher layer's header and
# no call of a function that a higher layer defines (object files of the build tree),
# but the known debts of tools/layers-allow.txt.  Then the checker's self-test: an
# upward include it is shown must fail.
set -u
chk="python3 $top_srcdir/tools/check-layers.py --top $top_srcdir --objects $top_builddir/framework --allow $top_srcdir/tools/layers-allow.txt"
out=$($chk 2>&1); rc=$?
echo "$out" | grep -v '^known:'
[ $rc -eq 0 ] || { echo "FAIL: layering violated (see above)"; exit 1; }
out=$($chk --inject framework/core/group.c:request/request.h 2>&1); rc=$?
if [ $rc -eq 0 ] || ! echo "$out" | grep -q 'core/group.c:injected: includes "request/request.h"'; then
    echo "FAIL: the checker did not catch an injected upward include"; echo "$out"; exit 1
fi
echo "ok: layers respected; an injected upward include is caught"
