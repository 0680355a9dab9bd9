/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KACC_CALC_H
#define KACC_CALC_H
size_t kacc_type_size(int type);
bool kacc_calc_valid(int type, int op);
/* inout[i] = inout[i] op in[i], n elements; 0, or nonzero for a bad pair */
int kacc_reduce(int type, int op, const void *in, void *inout, size_t n);
#endif
