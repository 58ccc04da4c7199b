/* SPDX-License-Identifier: Apache-2.0 */
/* ply_types.h - the PLY format's scalar types: their names, sizes and raw bits, for the two
 * readers of PLY bytes here (precheck_ply.c, which follows assimp's reading; tri_stream.c, which
 * streams triangles). Not part of any public header. */
#ifndef VOXLOD_FORMATS_PLY_TYPES_H
#define VOXLOD_FORMATS_PLY_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { T_NONE, T_CHAR, T_UCHAR, T_SHORT, T_USHORT, T_INT, T_UINT, T_FLOAT, T_DOUBLE };

/* The type named by w[0, n) (both spellings of the format), T_NONE for any other word. */
static inline int vx_ply_type(const unsigned char *w, size_t n) {
  static const struct {
    const char *name;
    unsigned char type;
  } types[] = {
      {"char", T_CHAR},   {"int8", T_CHAR},     {"uchar", T_UCHAR},   {"uint8", T_UCHAR},
      {"short", T_SHORT}, {"int16", T_SHORT},   {"ushort", T_USHORT}, {"uint16", T_USHORT},
      {"int", T_INT},     {"int32", T_INT},     {"uint", T_UINT},     {"uint32", T_UINT},
      {"float", T_FLOAT}, {"float32", T_FLOAT}, {"double", T_DOUBLE}, {"float64", T_DOUBLE}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strlen(types[i].name) == n && memcmp(types[i].name, w, n) == 0) return types[i].type;
  return T_NONE;
}

static inline uint64_t vx_ply_type_size(int t) {
  static const unsigned char sz[] = {0, 1, 1, 2, 2, 4, 4, 4, 8};
  return sz[t];
}

/* The bits of a value of type t at b, in the file's byte order, as an unsigned integer. */
static inline uint64_t vx_ply_raw(const unsigned char *b, int t, int big_endian) {
  const uint64_t sz = vx_ply_type_size(t);
  uint64_t u = 0;
  for (uint64_t k = 0; k < sz; k++) u |= (uint64_t)b[big_endian ? sz - 1 - k : k] << (8 * k);
  return u;
}

#endif
