#!/bin/bash
# Fortran attributes: predefined attribute values, keyvals with Fortran callbacks.
. "$top_srcdir/tests/fortran/kf.sh"
kf_need_fortran
kf_build fortran_attr.f90 fortran_attr
kf_run -n 2 ./fortran_attr
