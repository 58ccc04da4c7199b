/* SPDX-License-Identifier: Apache-2.0 */
/* precheck_util.h - helpers shared by the mesh prechecks (mesh_precheck.c, precheck_ply.c); not
 * part of any public header. Every count read from a file saturates instead of wrapping. */
#ifndef VOXLOD_FORMATS_PRECHECK_UTIL_H
#define VOXLOD_FORMATS_PRECHECK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "svo/svo.h"

static inline uint64_t vx_pc_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static inline uint64_t vx_pc_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}
static inline int vx_pc_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Decimal digits at p[*i..n) into *v (saturating); 0 when there is no digit. */
static inline int vx_pc_read_u64(const unsigned char *p, size_t n, size_t *i, uint64_t *v) {
  size_t k = *i;
  uint64_t x = 0;
  if (k >= n || !vx_pc_digit(p[k])) return 0;
  for (; k < n && vx_pc_digit(p[k]); k++) x = vx_pc_add(vx_pc_mul(x, 10), (uint64_t)(p[k] - '0'));
  *i = k;
  *v = x;
  return 1;
}

/* A name from the file, printable and at most 40 characters, for a message. */
static inline void vx_pc_printable(const unsigned char *s, size_t len, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < cap && i < 40; i++)
    out[k++] = s[i] > ' ' && s[i] < 127 ? (char)s[i] : '?';
  out[k] = 0;
}

/* The PLY check (precheck_ply.c): the header's counts against the file's size, then the data in
 * p[0..n) read as assimp reads it, every list count against the bytes that can hold it. */
vx_status vx_precheck_ply(const unsigned char *p, size_t n, uint64_t size, const char *what,
                          vx_error *err);

#endif
