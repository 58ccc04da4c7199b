/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_mesh_part.c - libFuzzer target: a tree meshed whole and in parts (mesher/mesher.h,
 * vx_dc_opts.part: what vx_tiled_file_mesh does with the windows of a tiled file), which must
 * agree.
 *
 * Input: byte 0: the depth (1 + b % 6); bytes 1..3: where the grid is cut in two along x, y, z
 * (b % (2^depth + 1)); byte 4: bits 0-2 zero: 2 threads (else one; the whole mesh with 2 must
 * be the same, whatever the order its threads ran in); then records of 11 bytes: a cell (3
 * bytes, masked to the grid) and its 8 corner values, each cell's first record kept (the first
 * 1024 records).
 * Checks (abort on failure):
 *   - the part that owns the whole grid is the plain mesh, array for array, plus keys;
 *   - each of the 8 parts the cuts make keeps only faces it owns, and every vertex it keeps is used;
 *   - together the parts hold the whole mesh's triangles, each once, as keys (each triangle
 *     rotated to start at its smallest key, its orientation kept), and each key's vertex at the
 *     whole mesh's place. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_tree.h"
#include "mesher/mesher.h"

typedef struct ktri {
  uint64_t k[3];
} ktri;

static int cmp_ktri(const void *a, const void *b) {
  const ktri *x = (const ktri *)a, *y = (const ktri *)b;
  for (int i = 0; i < 3; i++)
    if (x->k[i] != y->k[i]) return x->k[i] < y->k[i] ? -1 : 1;
  return 0;
}

/* Mesh m's triangles as keys, rotated to start at the smallest, appended at out[*n]. */
static void key_tris(const vx_dc_mesh *m, ktri *out, uint64_t *n) {
  for (uint64_t t = 0; t < m->triangle_count; t++) {
    ktri k;
    for (int i = 0; i < 3; i++) k.k[i] = m->key[m->tri[3 * t + (uint64_t)i]];
    while (k.k[0] > k.k[1] || k.k[0] > k.k[2]) {
      const uint64_t a = k.k[0];
      k.k[0] = k.k[1], k.k[1] = k.k[2], k.k[2] = a;
    }
    out[(*n)++] = k;
  }
}

/* The whole mesh's vertex of key `key` (binary search over its sorted keys), or -1. */
static int64_t find_key(const uint64_t *sorted, const uint32_t *idx, uint64_t n, uint64_t key) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const uint64_t m = (lo + hi) / 2;
    if (sorted[m] < key) lo = m + 1;
    else hi = m;
  }
  return lo < n && sorted[lo] == key ? (int64_t)idx[lo] : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5 + 11) return 0;
  const uint32_t depth = 1u + data[0] % 6u, R = 1u << depth, mask = R - 1u;
  const uint32_t cut[3] = {data[1] % (R + 1u), data[2] % (R + 1u), data[3] % (R + 1u)};
  const int threads = data[4] & 7 ? 1 : 2; /* threads are slow to start under the sanitizers */
  data += 5;
  size -= 5;
  const size_t n = size / 11 < 1024 ? size / 11 : 1024; /* ten meshes a run: keep them small */
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  vx_voxel *field = (vx_voxel *)malloc(n * sizeof *field);
  size_t *src = (size_t *)malloc(n * sizeof *src);
  const size_t m = codes && field && src ? fuzz_voxels(data, n, 11, mask, codes, field, src) : 0;
  vx_octree t;
  vx_error e;
  int built = m && vx_octree_build(depth, codes, field, m, &t, &e) == VX_OK;
  free(codes);
  free(field);
  free(src);
  if (!built) return 0;
  t.band = 2.0f;
  t.xf.scale = 0.5;
  vx_dc_opts o;
  memset(&o, 0, sizeof o);
  o.cut = VX_DC_FINEST;
  o.threads = threads;
  vx_dc_mesh plain, whole;
  if (vx_dc_extract(&t, &o, &plain, NULL, &e) != VX_OK) abort();
  o.part = 1;
  for (int i = 0; i < 3; i++) o.own_lo[i] = 0, o.own_hi[i] = UINT32_MAX;
  if (vx_dc_extract(&t, &o, &whole, NULL, &e) != VX_OK) abort();
  const uint64_t nv = whole.vertex_count, nt = whole.triangle_count;
  if (nv != plain.vertex_count || nt != plain.triangle_count || !whole.key ||
      memcmp(whole.pos, plain.pos, (size_t)nv * 12) != 0 ||
      memcmp(whole.nrm, plain.nrm, (size_t)nv * 12) != 0 ||
      memcmp(whole.tri, plain.tri, (size_t)nt * 12) != 0)
    abort();
  vx_dc_mesh_free(&plain);
  /* the whole mesh's keys, sorted, and its triangles as keys */
  uint64_t *sk = (uint64_t *)malloc((size_t)(nv + 1) * 8);
  uint32_t *si = (uint32_t *)malloc((size_t)(nv + 1) * 4);
  uint64_t *pair = (uint64_t *)malloc((size_t)(nv + 1) * 16);
  ktri *a = (ktri *)malloc((size_t)(nt + 1) * sizeof *a), *b = (ktri *)malloc((size_t)(nt + 1) * sizeof *b);
  if (!sk || !si || !pair || !a || !b) abort();
  for (uint64_t v = 0; v < nv; v++) pair[2 * v] = whole.key[v], pair[2 * v + 1] = v;
  qsort(pair, (size_t)nv, 16, cmp_u64); /* by key (the first word) */
  for (uint64_t v = 0; v < nv; v++) {
    sk[v] = pair[2 * v];
    si[v] = (uint32_t)pair[2 * v + 1];
    if (v && sk[v] == sk[v - 1]) abort(); /* keys are unique */
  }
  free(pair);
  uint64_t na = 0, nb = 0;
  key_tris(&whole, a, &na);
  for (uint32_t p = 0; p < 8; p++) {
    for (int i = 0; i < 3; i++) {
      const int up = p >> i & 1;
      o.own_lo[i] = up ? cut[i] : 0;
      o.own_hi[i] = up ? UINT32_MAX : cut[i];
    }
    vx_dc_mesh part;
    if (vx_dc_extract(&t, &o, &part, NULL, &e) != VX_OK) abort();
    if (nb + part.triangle_count > nt) abort(); /* more triangles than the whole */
    uint8_t *used = (uint8_t *)calloc((size_t)(part.vertex_count + 1), 1);
    for (uint64_t i = 0; i < 3 * part.triangle_count; i++) used[part.tri[i]] = 1;
    for (uint64_t v = 0; v < part.vertex_count; v++) {
      const int64_t w = find_key(sk, si, nv, part.key[v]);
      if (!used[v] || w < 0 || memcmp(part.pos + 3 * v, whole.pos + 3 * w, 12) != 0) abort();
    }
    free(used);
    key_tris(&part, b, &nb);
    vx_dc_mesh_free(&part);
  }
  if (na != nb) abort();
  qsort(a, (size_t)na, sizeof *a, cmp_ktri);
  qsort(b, (size_t)nb, sizeof *b, cmp_ktri);
  if (memcmp(a, b, (size_t)na * sizeof *a) != 0) abort();
  free(a);
  free(b);
  free(sk);
  free(si);
  vx_dc_mesh_free(&whole);
  vx_octree_free(&t);
  return 0;
}
