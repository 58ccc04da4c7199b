/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_tiled.c - tiled trees (formats/svo_tiled.h, lib/convert_tiled.c): a tiled build
 * joined back is the untiled build of the same mesh, voxel for voxel and byte for byte; a tile
 * cut out of the file is an ordinary .svo; the bytes do not depend on threads; damaged and forged
 * files are refused with bounded memory. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "lib/internal.h"
#include "tiled_scene.h"
#include "formats/svo_codec.h"
#include "formats/svo_tiled.h"
#include "tiled_damage.h"
#include "sys/system.h"

#include <unistd.h>

static char dir[256];

/* A torus around a sphere, off centre: tiles full, empty and cut through. */

static vx_status convert(const vx_mesh *m, uint32_t res, uint32_t tile_depth, int threads,
                         const char *path, vx_error *err) {
  return tiled_convert(m, res, tile_depth, VX_DEVICE_CPU, 0, threads, path, err);
}


/* The untiled and the tiled file of one mesh: the tiled one joined is the same tree, and both
 * encode to the same bytes. */
static void same_tree(uint32_t res, uint32_t T) {
  vx_mesh *m = tiled_scene();
  char u[300], t[300];
  snprintf(u, sizeof u, "%s/u.svo", dir);
  snprintf(t, sizeof t, "%s/t.svo", dir);
  vx_error e;
  CHECK(convert(m, res, 0, 0, u, &e) == VX_OK);
  CHECK(convert(m, res, T, 0, t, &e) == VX_OK);
  vx_tree *a = NULL, *b = NULL;
  CHECK(vx_tree_load(u, NULL, &a, &e) == VX_OK);
  CHECK(vx_tree_load(t, NULL, &b, &e) == VX_OK);
  if (a && b) {
    const vx_octree *x = &a->oct, *y = &b->oct;
    CHECK(x->depth == y->depth && x->node_count == y->node_count &&
          x->voxel_count == y->voxel_count);
    CHECK(x->node_count == y->node_count &&
          memcmp(x->nodes, y->nodes, x->node_count * sizeof(vx_node)) == 0);
    CHECK(x->voxel_count == y->voxel_count &&
          memcmp(x->voxels, y->voxels, x->voxel_count * sizeof(vx_voxel)) == 0);
    void *p = NULL, *q = NULL;
    size_t pn = 0, qn = 0;
    CHECK(vx_tree_encode(a, NULL, &p, &pn, &e) == VX_OK);
    CHECK(vx_tree_encode(b, NULL, &q, &qn, &e) == VX_OK);
    CHECK(pn == qn && pn > 0 && memcmp(p, q, pn) == 0);
    vx_buffer_free(p);
    vx_buffer_free(q);
    vx_tree_info i;
    memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    CHECK(vx_tree_get_info(b, &i) == VX_OK && i.file_version == 3 && i.tile_depth == T &&
          i.tile_count >= 1 && i.tile_count <= (1ull << 3 * (i.depth - T)));
    printf("%u^3 in %u^3 tiles: %llu tiles, %llu voxels, %llu nodes: the untiled tree\n", res,
           1u << (i.depth - T), (unsigned long long)i.tile_count,
           (unsigned long long)i.voxel_count, (unsigned long long)i.node_count);
  }
  /* partial reads: levels 0 .. L of the tiled file are those of the untiled one, above the
   * tiles (from the top tree alone), at their roots and inside them */
  for (uint32_t L = 0; a && b && L < a->oct.depth; L++) {
    vx_read_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.struct_size = sizeof ro;
    ro.levels = L + 1;
    vx_tree *pa = NULL, *pb = NULL;
    CHECK(vx_tree_load(u, &ro, &pa, &e) == VX_OK);
    CHECK(vx_tree_load(t, &ro, &pb, &e) == VX_OK);
    if (pa && pb) {
      CHECK(pa->oct.levels_loaded == L + 1 && pb->oct.levels_loaded == L + 1 &&
            pa->oct.node_count == pb->oct.node_count && pb->oct.voxel_count == 0);
      CHECK(pa->oct.node_count == pb->oct.node_count &&
            memcmp(pa->oct.nodes, pb->oct.nodes, pa->oct.node_count * sizeof(vx_node)) == 0);
    }
    vx_tree_free(pa);
    vx_tree_free(pb);
  }
  /* the tiled file read tile by tile: the same levels as the joined tree, tiles that add up */
  vx_tiled_file *tf = NULL;
  CHECK(vx_tiled_file_open(t, NULL, &tf, &e) == VX_OK);
  vx_tiled_file *none = NULL;
  CHECK(vx_tiled_file_open(u, NULL, &none, &e) == VX_ERR_FORMAT && none == NULL);
  if (tf && b) {
    vx_tree_info fi, ji;
    memset(&fi, 0, sizeof fi);
    memset(&ji, 0, sizeof ji);
    fi.struct_size = ji.struct_size = sizeof fi;
    CHECK(vx_tiled_file_get_info(tf, &fi) == VX_OK && vx_tree_get_info(b, &ji) == VX_OK);
    CHECK(fi.depth == ji.depth && fi.node_count == ji.node_count &&
          fi.voxel_count == ji.voxel_count && fi.tile_count == ji.tile_count);
    for (uint32_t l = 0; l <= fi.depth; l++) {
      vx_level_stats x, y;
      memset(&x, 0, sizeof x);
      memset(&y, 0, sizeof y);
      x.struct_size = y.struct_size = sizeof x;
      CHECK(vx_tiled_file_get_level(tf, l, &x, &e) == VX_OK && vx_tree_get_level(b, l, &y) == VX_OK);
      CHECK(x.cells == y.cells && x.topology_bytes == y.topology_bytes &&
            x.field_bytes == y.field_bytes && x.render_bytes == y.render_bytes);
    }
    uint64_t vox = 0, bytes = 0;
    for (uint64_t k = 0; k < fi.tile_count; k++) {
      vx_tile_info ti;
      memset(&ti, 0, sizeof ti);
      ti.struct_size = sizeof ti;
      CHECK(vx_tiled_file_get_tile(tf, k, &ti) == VX_OK);
      vox += ti.voxel_count;
      bytes += ti.file_bytes;
      vx_tree *one = NULL;
      CHECK(vx_tiled_file_load_tile(tf, k, NULL, &one, &e) == VX_OK);
      vx_tree_info oi;
      memset(&oi, 0, sizeof oi);
      oi.struct_size = sizeof oi;
      CHECK(one && vx_tree_get_info(one, &oi) == VX_OK && oi.voxel_count == ti.voxel_count &&
            oi.depth == T && oi.origin[0] == ti.origin[0] && oi.origin[2] == ti.origin[2]);
      vx_tree_free(one);
    }
    CHECK(vox == fi.voxel_count && bytes < fi.file_bytes);
  }
  vx_tiled_file_close(tf);
  /* each tile, cut out of the file, is a version-2 .svo placed at its cell */
  vx_tiled *tl = NULL;
  CHECK(vx_tiled_open(t, NULL, &tl, &e) == VX_OK);
  size_t n = 0;
  uint8_t *bytes = tiled_slurp(t, &n);
  for (uint64_t k = 0; tl && k < vx_tiled_tile_count(tl); k++) {
    const vx_tile_entry *te = vx_tiled_tile(tl, k);
    vx_octree one, two;
    CHECK(vx_svo_decode(bytes + te->offset, te->length, NULL, &one, NULL, &e) == VX_OK);
    CHECK(vx_tiled_read_tile(tl, k, NULL, &two, &e) == VX_OK);
    CHECK(one.voxel_count == te->voxels && one.voxel_count == two.voxel_count);
    vx_transform want;
    vx_tile_transform(vx_tiled_get_header(tl), te->code, &want);
    CHECK(memcmp(&one.xf, &want, sizeof want) == 0);
    vx_octree_free(&one);
    vx_octree_free(&two);
  }
  free(bytes);
  vx_tiled_close(tl);
  vx_tree_free(a);
  vx_tree_free(b);
  vx_mesh_free(m);
}

static void tiled_equals_untiled(void) {
  same_tree(64, 3);  /* 8^3 tiles of 8^3 */
  same_tree(512, 7); /* 4^3 tiles of 128^3 */
}

/* The same bytes on 1 and 2 threads; a finer grid than one tree holds refuses to join. */
static void bytes_do_not_depend_on_threads(void) {
  vx_mesh *m = tiled_scene();
  char a[300], b[300];
  snprintf(a, sizeof a, "%s/a.svo", dir);
  snprintf(b, sizeof b, "%s/b.svo", dir);
  vx_error e;
  CHECK(convert(m, 128, 4, 1, a, &e) == VX_OK);
  CHECK(convert(m, 128, 4, 2, b, &e) == VX_OK);
  size_t an = 0, bn = 0;
  uint8_t *x = tiled_slurp(a, &an), *y = tiled_slurp(b, &bn);
  CHECK(an == bn && an > 0 && memcmp(x, y, an) == 0);
  free(x);
  free(y);
  /* the old reader's answer to a tiled file: not one tree */
  vx_octree o;
  CHECK(vx_svo_read(a, NULL, &o, NULL, &e) == VX_ERR_FORMAT && strstr(e.msg, "tiled") != NULL);
  vx_mesh_free(m);
}

/* A memory limit that cannot hold the plan (the whole mesh's sign tables and tile lists) is
 * refused before the plan is made, with the sizes, and leaves no file; one that holds it builds. */
static void plan_over_the_limit_is_refused_first(void) {
  vx_mesh *m = tiled_scene();
  char p[300];
  snprintf(p, sizeof p, "%s/limit.svo", dir);
  vx_convert_opts o = tiled_opts(128, 4, VX_DEVICE_CPU, 0, 2);
  const uint64_t tris = 40 * 20 * 2 + 48 * 16 * 2; /* the scene's triangles */
  o.mem_limit = vx_resident_bytes() + tris * 100;  /* under 180 B a triangle for the tables */
  vx_error e;
  vx_status s = vx_convert_to_file(m, &o, p, NULL, &e);
  CHECK_MSG(s == VX_ERR_LIMIT && strstr(e.msg, "before its first tile") &&
                strstr(e.msg, "sign tables and tile lists"),
            "%d %s", (int)s, e.msg);
  CHECK(access(p, F_OK) != 0);
  o.mem_limit = vx_resident_bytes() + (256u << 20);
  CHECK_MSG(vx_convert_to_file(m, &o, p, NULL, &e) == VX_OK, "%s", e.msg);
  CHECK(access(p, F_OK) == 0);
  remove(p);
  vx_mesh_free(m);
}

/* A small tiled file in memory. */
static uint8_t *small_file(size_t *n) {
  vx_mesh *m = tiled_scene();
  char p[300];
  snprintf(p, sizeof p, "%s/s.svo", dir);
  CHECK(convert(m, 16, 2, 0, p, NULL) == VX_OK);
  vx_mesh_free(m);
  return tiled_slurp(p, n);
}

/* Every single-byte change and every truncation is refused. */
static void damage_is_refused(void) {
  size_t n = 0;
  uint8_t *d = small_file(&n);
  vx_error e;
  CHECK(d && tiled_open_all(d, n, &e) == VX_OK);
  CHECK(d && tiled_damage_missed(d, n) == 0);
  printf("%zu bytes: every byte changed and every truncation refused\n", n);
  free(d);
}

/* A partial tile read (max_level < tile depth) reads the tile's header and the sections it
 * decodes, not the whole tile: every byte changed in that prefix is refused, a byte changed after
 * it leaves the same levels (a full read of that tile is refused). */
static void partial_reads_read_a_prefix(void) {
  size_t n = 0;
  uint8_t *d = small_file(&n);
  vx_error e;
  vx_tiled *t = NULL;
  CHECK(d && vx_tiled_open_memory(d, n, NULL, &t, &e) == VX_OK);
  uint64_t refused = 0, kept = 0, wrong = 0;
  for (uint64_t i = 0; t && i < vx_tiled_tile_count(t); i++) {
    const vx_tile_entry *en = vx_tiled_tile(t, i);
    vx_octree h, ref, got;
    vx_svo_file_info fi;
    CHECK(vx_tiled_tile_header(t, i, &h, &fi, &e) == VX_OK);
    for (int L = 0; L < (int)vx_tiled_get_header(t)->tile_depth; L++) {
      uint64_t prefix = fi.header_bytes;
      for (int l = 0; l <= L; l++) prefix += fi.level_disk_bytes[l];
      vx_svo_read_opts ro = {L, 0, 0, 0};
      CHECK(vx_tiled_read_tile(t, i, &ro, &ref, &e) == VX_OK && ref.levels_loaded == (uint32_t)L + 1);
      for (uint64_t b = 0; b < en->length; b++) {
        uint8_t *at = d + en->offset + b;
        const uint8_t keep = *at;
        *at ^= 0x21;
        vx_status s = vx_tiled_read_tile(t, i, &ro, &got, &e);
        if (b < prefix) {
          refused += s != VX_OK;
          wrong += s == VX_OK;
        } else {
          kept += s == VX_OK;
          wrong += s != VX_OK || got.node_count != ref.node_count ||
                   memcmp(got.nodes, ref.nodes, ref.node_count * sizeof(vx_node)) != 0;
          vx_octree full;
          wrong += vx_tiled_read_tile(t, i, NULL, &full, &e) == VX_OK; /* the whole tile: damaged */
          vx_octree_free(&full);
        }
        if (s == VX_OK) vx_octree_free(&got);
        *at = keep;
      }
      vx_octree_free(&ref);
    }
  }
  printf("partial tile reads: %llu changed bytes in the prefix refused, %llu after it unread\n",
         (unsigned long long)refused, (unsigned long long)kept);
  CHECK(wrong == 0 && refused > 0 && kept > 0);
  vx_tiled_close(t);
  free(d);
}

/* Rewrites the header record (and the directory with `dir_edit`) with valid frames and checks,
 * as a forger would: the semantic checks must refuse what the checksums cannot. */
typedef void (*edit_fn)(uint8_t *hdr, uint8_t *dirr, uint64_t K, uint64_t ntiles);

static uint8_t *reframe(const uint8_t *d, size_t n, edit_fn edit, size_t *out_n) {
  const uint8_t *tr = d + n - 32;
  const uint64_t hoff = vx_get_u64(tr);
  const uint32_t hz = vx_get_u32(tr + 8), hr = vx_get_u32(tr + 12);
  uint8_t hdr[256];
  ZSTD_decompress(hdr, hr, d + hoff, hz);
  const uint64_t dz = vx_get_u64(hdr + 64), draw = vx_get_u64(hdr + 72);
  uint8_t *dirr = (uint8_t *)malloc(draw);
  ZSTD_decompress(dirr, draw, d + hoff + hz, dz);
  const uint64_t K = vx_get_u32(hdr) - vx_get_u32(hdr + 4), N = vx_get_u64(hdr + 56);
  edit(hdr, dirr, K, N);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  uint8_t *nd = (uint8_t *)malloc(ZSTD_compressBound(draw));
  size_t ndz = ZSTD_compress2(cc, nd, ZSTD_compressBound(draw), dirr, draw);
  uint32_t dcheck = 0, hcheck = 0;
  vx_svo_bytes_check(cc, nd, ndz, &dcheck);
  vx_put_u64(hdr + 64, ndz);
  vx_put_u32(hdr + 80, dcheck);
  ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
  uint8_t nh[512];
  size_t nhz = ZSTD_compress2(cc, nh, sizeof nh, hdr, hr);
  ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
  vx_svo_bytes_check(cc, nh, nhz, &hcheck);
  ZSTD_freeCCtx(cc);
  *out_n = hoff + nhz + ndz + 32;
  uint8_t *o = (uint8_t *)malloc(*out_n);
  memcpy(o, d, hoff);
  memcpy(o + hoff, nh, nhz);
  memcpy(o + hoff + nhz, nd, ndz);
  uint8_t *t = o + hoff + nhz + ndz;
  memcpy(t, tr, 32);
  vx_put_u32(t + 8, (uint32_t)nhz);
  vx_put_u32(t + 16, hcheck);
  free(nd);
  free(dirr);
  return o;
}

/* where the index starts in the directory: after the top levels' records */
static uint8_t *index_of(uint8_t *hdr, uint8_t *dirr, uint64_t K) {
  uint64_t nodes = 0;
  for (uint64_t l = 0; l <= K; l++) nodes += vx_get_u64(hdr + 112 + 8 * l);
  return dirr + nodes * 12;
}
static void e_none(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) { (void)h, (void)d, (void)K, (void)N; }
static void e_huge(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  (void)d, (void)K, (void)N;
  vx_put_u64(h + 56, UINT64_C(1) << 63);
}
static void e_deep(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  (void)d, (void)K, (void)N;
  vx_put_u32(h, 21);
}
static void e_swap(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  uint8_t *ix = index_of(h, d, K), tmp[8]; /* the first two tiles' cells trade places */
  if (N < 2) return;
  memcpy(tmp, ix, 8);
  memcpy(ix, ix + 48, 8);
  memcpy(ix + 48, tmp, 8);
}
static void e_dup(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  uint8_t *ix = index_of(h, d, K);
  if (N >= 2) memcpy(ix + 48, ix, 8); /* tile 1 names tile 0's cell */
}
static void e_outside(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  uint8_t *ix = index_of(h, d, K);
  vx_put_u64(ix + 48 * (N - 1), UINT64_C(1) << 3 * K);
}
static void e_missing(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  (void)K, (void)N;
  d[0] ^= 0x80; /* the root's mask names another child set: the tiles disagree with it */
  (void)h;
}
static void e_root(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  (void)N;
  uint64_t before = 0;
  for (uint64_t l = 0; l < K; l++) before += vx_get_u64(h + 112 + 8 * l);
  uint64_t nk = vx_get_u64(h + 112 + 8 * K);
  uint8_t *rec = d + before * 12 + nk; /* level K's first record, after its masks */
  rec[7] ^= 0x01;                      /* its plane's offset: tile 0's root disagrees */
}
static void e_offset(uint8_t *h, uint8_t *d, uint64_t K, uint64_t N) {
  uint8_t *ix = index_of(h, d, K);
  (void)N;
  vx_put_u64(ix + 8, vx_get_u64(ix + 8) + 1);
}

static void forgeries_are_refused(void) {
  size_t n = 0;
  uint8_t *d = small_file(&n);
  struct {
    edit_fn f;
    vx_status want;
    const char *words;
  } cases[] = {
      {e_none, VX_OK, ""},
      {e_huge, VX_ERR_CORRUPT, "impossible"},
      {e_deep, VX_ERR_CORRUPT, "out of range"},
      {e_swap, VX_ERR_CORRUPT, "out of order"},
      {e_dup, VX_ERR_CORRUPT, "duplicate"},
      {e_outside, VX_ERR_CORRUPT, "outside"},
      {e_missing, VX_ERR_CORRUPT, ""},
      {e_root, VX_ERR_CORRUPT, "root disagrees"},
      {e_offset, VX_ERR_CORRUPT, "not where"},
  };
  for (size_t c = 0; d && c < sizeof cases / sizeof cases[0]; c++) {
    size_t m = 0;
    uint8_t *f = reframe(d, n, cases[c].f, &m);
    vx_error e;
    memset(&e, 0, sizeof e);
    vx_status s = tiled_open_all(f, m, &e);
    if (s != cases[c].want || !strstr(e.msg, cases[c].words))
      fprintf(stderr, "case %zu: status %d: %s\n", c, (int)s, e.msg);
    CHECK(s == cases[c].want && strstr(e.msg, cases[c].words) != NULL);
    free(f);
  }
  free(d);
}

/* The writer refuses a tile of another build, tiles out of order and a tile damaged inside a
 * section, and leaves no file. */
static void merge_refuses_other_builds(void) {
  size_t n = 0;
  uint8_t *d = small_file(&n);
  vx_tiled *t = NULL;
  vx_error e;
  CHECK(d && vx_tiled_open_memory(d, n, NULL, &t, &e) == VX_OK);
  if (t) {
    vx_tiled_header h = *vx_tiled_get_header(t);
    char p[300];
    snprintf(p, sizeof p, "%s/m.svo", dir);
    unlink(p);
    vx_tiled_writer *w = NULL;
    CHECK(vx_tiled_writer_open(p, &h, &w, &e) == VX_OK);
    const vx_tile_entry *a = vx_tiled_tile(t, 0), *b = vx_tiled_tile(t, 1);
    vx_fit_root fit;
    memset(&fit, 0, sizeof fit);
    uint32_t known = 0; /* the check the writer would compute, given */
    CHECK(vx_svo_encoded_check(d + b->offset, b->length, &known, &e) == VX_OK &&
          known == b->check);
    CHECK(vx_tiled_writer_add(w, b->code, h.build_id, d + b->offset, b->length, &known, &fit,
                              &e) == VX_OK);
    CHECK(vx_tiled_writer_add(w, a->code, h.build_id, d + a->offset, a->length, NULL, &fit,
                              &e) == VX_ERR_INVALID_ARG); /* out of order */
    CHECK(vx_tiled_writer_add(w, b->code + 1, h.build_id ^ 1, d + b->offset, b->length, NULL,
                              &fit, &e) == VX_ERR_INVALID_ARG &&
          strstr(e.msg, "another build"));
    CHECK(vx_tiled_writer_add(w, b->code + 1, h.build_id, d + a->offset, a->length, NULL, &fit,
                              &e) == VX_ERR_CORRUPT); /* tile 0's bytes are not placed at another cell */
    vx_tiled_writer_abort(w);
    CHECK(access(p, F_OK) != 0);
    /* a tile built elsewhere, damaged inside a section that its root read does not decode,
     * with a record made over the damaged bytes: the merge checks every section */
    char tp[300];
    snprintf(tp, sizeof tp, "%s/tile.svo", dir);
    uint8_t *bad = (uint8_t *)malloc(a->length);
    memcpy(bad, d + a->offset, a->length);
    bad[a->length - 2] ^= 0x40; /* the last section: the finest level's frame */
    FILE *f = fopen(tp, "wb");
    CHECK(f && fwrite(bad, 1, a->length, f) == a->length);
    if (f) fclose(f);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    uint32_t check = 0;
    CHECK(cc && vx_svo_bytes_check(cc, bad, a->length, &check));
    ZSTD_freeCCtx(cc);
    CHECK(vx_tiled_writer_open(p, &h, &w, &e) == VX_OK);
    CHECK(vx_tiled_writer_add_checked(w, a->code, h.build_id, tp, &fit, a->length, check, &e) ==
              VX_ERR_CORRUPT &&
          strstr(e.msg, "damaged"));
    CHECK(vx_tiled_writer_add_checked(w, a->code, h.build_id, tp, &fit, a->length, check, &e) ==
          VX_ERR_CORRUPT);
    vx_tiled_writer_abort(w);
    CHECK(access(p, F_OK) != 0);
    free(bad);
    remove(tp);
  }
  vx_tiled_close(t);
  free(d);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/voxlod-tiled-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN(tiled_equals_untiled);
  RUN(bytes_do_not_depend_on_threads);
  RUN(plan_over_the_limit_is_refused_first);
  RUN(damage_is_refused);
  RUN(partial_reads_read_a_prefix);
  RUN(forgeries_are_refused);
  RUN(merge_refuses_other_builds);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
