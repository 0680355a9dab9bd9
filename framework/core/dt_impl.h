/* Datatypes: what datatype.c (objects, constructors) and dt_pack.c (the pack
 * engine, Pack/Unpack, external32, element counts) share. */
#ifndef KUMI_DT_IMPL_H
#define KUMI_DT_IMPL_H

#include "core/core.h"

/* external32 conversion class of a leaf (a non-pair predefined type) */
enum dt_xcls { DT_X_RAW, DT_X_INT, DT_X_UINT, DT_X_FLT, DT_X_LDBL };
struct dt_leaf {
    size_t nsize;                   /* native bytes */
    size_t xsize;                   /* external32 bytes */
    int cls;                        /* enum dt_xcls */
    size_t comp;                    /* DT_X_FLT / DT_X_LDBL: bytes of one component (complex: 2) */
};
const struct dt_leaf *kumi_dt_leaf(uint32_t leaf);

/* Walk the segments of count elements: calls fn for every block in packed order. */
#endif
