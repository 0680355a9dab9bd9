// SPDX-License-Identifier: GPL-2.0
/* KACC: the reduction of CALC nodes (MPI's predefined operations on the
 * predefined integer and floating types).  Built with the FPU enabled
 * (Kbuild); the caller brackets every call with kernel_fpu_begin/end. */
#include <linux/types.h>
#include <linux/errno.h>
#include "kumi_kacc_uapi.h"
#include "kacc_calc.h"

#define ARITH(T)                                                                         \
    static int red_##T(int op, const T *a, T *b, size_t n)                               \
    {                                                                                    \
        size_t i;                                                                        \
        switch (op) {                                                                    \
        case KACC_OP_SUM:  for (i = 0; i < n; i++) b[i] = b[i] + a[i]; return 0;         \
        case KACC_OP_PROD: for (i = 0; i < n; i++) b[i] = b[i] * a[i]; return 0;         \
        case KACC_OP_MIN:  for (i = 0; i < n; i++) if (a[i] < b[i]) b[i] = a[i]; return 0; \
        case KACC_OP_MAX:  for (i = 0; i < n; i++) if (a[i] > b[i]) b[i] = a[i]; return 0; \
        case KACC_OP_LAND: for (i = 0; i < n; i++) b[i] = (a[i] != 0) && (b[i] != 0); return 0; \
        case KACC_OP_LOR:  for (i = 0; i < n; i++) b[i] = (a[i] != 0) || (b[i] != 0); return 0; \
        case KACC_OP_LXOR: for (i = 0; i < n; i++) b[i] = (a[i] != 0) != (b[i] != 0); return 0; \
        }                                                                                \
        return 1;                                                                        \
    }
#define BITS(T)                                                                          \
    static int bits_##T(int op, const T *a, T *b, size_t n)                              \
    {                                                                                    \
        size_t i;                                                                        \
        switch (op) {                                                                    \
        case KACC_OP_BAND: for (i = 0; i < n; i++) b[i] &= a[i]; return 0;               \
        case KACC_OP_BOR:  for (i = 0; i < n; i++) b[i] |= a[i]; return 0;               \
        case KACC_OP_BXOR: for (i = 0; i < n; i++) b[i] ^= a[i]; return 0;               \
        }                                                                                \
        return red_##T(op, a, b, n);                                                     \
    }

/* Integer sums and products wrap (unsigned arithmetic, like two's complement). */
typedef s8 i8_t;
typedef u8 u8_t;
typedef s16 i16_t;
typedef u16 u16_t;
typedef s32 i32_t;
typedef u32 u32_t;
typedef s64 i64_t;
typedef u64 u64_t;
typedef float f32_t;
typedef double f64_t;
ARITH(i8_t) ARITH(u8_t) ARITH(i16_t) ARITH(u16_t) ARITH(i32_t) ARITH(u32_t) ARITH(i64_t) ARITH(u64_t)
ARITH(f32_t) ARITH(f64_t)
BITS(i8_t) BITS(u8_t) BITS(i16_t) BITS(u16_t) BITS(i32_t) BITS(u32_t) BITS(i64_t) BITS(u64_t)

size_t kacc_type_size(int type)
{
    static const unsigned char sz[KACC_T_MAX_] = {
        [KACC_T_I8] = 1, [KACC_T_U8] = 1, [KACC_T_I16] = 2, [KACC_T_U16] = 2, [KACC_T_I32] = 4,
        [KACC_T_U32] = 4, [KACC_T_I64] = 8, [KACC_T_U64] = 8, [KACC_T_F32] = 4, [KACC_T_F64] = 8,
    };
    return type > 0 && type < KACC_T_MAX_ ? sz[type] : 0;
}

bool kacc_calc_valid(int type, int op)
{
    if (!kacc_type_size(type) || op < 1 || op >= KACC_OP_MAX_) return false;
    if (type == KACC_T_F32 || type == KACC_T_F64)
        return op != KACC_OP_BAND && op != KACC_OP_BOR && op != KACC_OP_BXOR;
    return true;
}

/* Signed sums and products are done on the unsigned type (no undefined overflow). */
int kacc_reduce(int type, int op, const void *in, void *inout, size_t n)
{
    if (op == KACC_OP_SUM || op == KACC_OP_PROD) {
        switch (type) {
        case KACC_T_I8: type = KACC_T_U8; break;
        case KACC_T_I16: type = KACC_T_U16; break;
        case KACC_T_I32: type = KACC_T_U32; break;
        case KACC_T_I64: type = KACC_T_U64; break;
        }
    }
    switch (type) {
    case KACC_T_I8:  return bits_i8_t(op, in, inout, n);
    case KACC_T_U8:  return bits_u8_t(op, in, inout, n);
    case KACC_T_I16: return bits_i16_t(op, in, inout, n);
    case KACC_T_U16: return bits_u16_t(op, in, inout, n);
    case KACC_T_I32: return bits_i32_t(op, in, inout, n);
    case KACC_T_U32: return bits_u32_t(op, in, inout, n);
    case KACC_T_I64: return bits_i64_t(op, in, inout, n);
    case KACC_T_U64: return bits_u64_t(op, in, inout, n);
    case KACC_T_F32: return red_f32_t(op, in, inout, n);
    case KACC_T_F64: return red_f64_t(op, in, inout, n);
    }
    return -EINVAL;
}
