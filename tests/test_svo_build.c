/* SPDX-License-Identifier: Apache-2.0 */
/* test_svo_build.c - octree invariants and exact node counts on hand-made voxel sets. */
#include "svo/svo.h"
#include "check.h"

static vx_status build(uint32_t depth, const uint64_t *codes, uint64_t n, vx_octree *t) {
  vx_voxel *f = (vx_voxel *)calloc(n ? n : 1, sizeof(vx_voxel));
  vx_status s = vx_octree_build(depth, codes, f, n, t, NULL);
  free(f);
  t->band = 2.0f;
  t->xf.scale = 1.0;
  return s;
}

static void svo_build_rejects_empty(void) {
  vx_octree t;
  CHECK(build(3, NULL, 0, &t) == VX_ERR_EMPTY);
  vx_octree_free(&t);
}

static void svo_build_one_voxel_has_one_node_per_level(void) {
  uint64_t code = vx_morton_encode(5, 2, 7);
  vx_octree t;
  CHECK(build(3, &code, 1, &t) == VX_OK);
  for (uint32_t l = 0; l <= 3; l++) CHECK(t.level_count[l] == 1);
  CHECK(t.node_count == 3 && t.voxel_count == 1);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  /* The path to (5,2,7) = binary 101, 010, 111: slots per level. */
  CHECK(vx_node_mask(t.nodes[0].info) == (1u << (1 | 0 << 1 | 1 << 2)));
  CHECK(vx_node_mask(t.nodes[1].info) == (1u << (0 | 1 << 1 | 1 << 2)));
  CHECK(vx_node_mask(t.nodes[2].info) == (1u << (1 | 0 << 1 | 1 << 2)));
  vx_octree_free(&t);
}

static void svo_build_full_grid_counts(void) {
  const uint32_t depth = 4;
  uint64_t n = (uint64_t)1 << (3 * depth);
  uint64_t *codes = (uint64_t *)malloc(n * sizeof *codes);
  for (uint64_t i = 0; i < n; i++) codes[i] = i;
  vx_octree t;
  CHECK(build(depth, codes, n, &t) == VX_OK);
  for (uint32_t l = 0; l <= depth; l++) CHECK(t.level_count[l] == (uint64_t)1 << (3 * l));
  for (uint64_t k = 0; k < t.node_count; k++) CHECK(vx_node_mask(t.nodes[k].info) == 0xff);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  free(codes);
  vx_octree_free(&t);
}

static void svo_build_rejects_unsorted(void) {
  uint64_t codes[2] = {9, 3};
  vx_octree t;
  CHECK(build(2, codes, 2, &t) == VX_ERR_INVALID_ARG);
  vx_octree_free(&t);
}

/* Random sparse sets against a brute-force count of distinct cells per level. */
static void svo_build_random_sets_match_brute_force(void) {
  srand(7);
  for (int trial = 0; trial < 20; trial++) {
    const uint32_t depth = 5, R = 32;
    static unsigned char occ[32][32][32];
    memset(occ, 0, sizeof occ);
    int want = 1 + rand() % 400;
    for (int i = 0; i < want; i++) occ[rand() % R][rand() % R][rand() % R] = 1;
    uint64_t *codes = (uint64_t *)malloc(R * R * R * sizeof *codes), n = 0;
    for (uint32_t m = 0; m < R * R * R; m++) {
      uint32_t x, y, z;
      vx_morton_decode(m, &x, &y, &z);
      if (occ[x][y][z]) codes[n++] = m;
    }
    vx_octree t;
    CHECK(build(depth, codes, n, &t) == VX_OK);
    CHECK(vx_octree_validate(&t, NULL) == VX_OK);
    for (uint32_t l = 0; l <= depth; l++) {
      uint32_t s = depth - l, c = 0, cells = 1u << l;
      for (uint32_t x = 0; x < cells; x++)
        for (uint32_t y = 0; y < cells; y++)
          for (uint32_t z = 0; z < cells; z++) {
            int any = 0;
            for (uint32_t i = 0; i < (1u << s) && !any; i++)
              for (uint32_t j = 0; j < (1u << s) && !any; j++)
                for (uint32_t k = 0; k < (1u << s) && !any; k++)
                  any = occ[(x << s) + i][(y << s) + j][(z << s) + k];
            c += any;
          }
      CHECK_MSG(t.level_count[l] == c, "level %u: %llu vs %u", l,
                (unsigned long long)t.level_count[l], c);
    }
    /* Corrupting a child index or a mask is caught. */
    if (t.node_count > 1) {
      t.nodes[0].child += 1;
      CHECK(vx_octree_validate(&t, NULL) == VX_ERR_CORRUPT);
      t.nodes[0].child -= 1;
      t.nodes[t.node_count - 1].info ^= 0x1;
      vx_error e;
      CHECK(vx_octree_validate(&t, &e) == VX_ERR_CORRUPT);
    }
    free(codes);
    vx_octree_free(&t);
  }
}

static int cmp_code(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* vx_octree_link links a level of more than 2^20 nodes in pieces side by side: the child indices
 * vx_octree_build made, every time; masks that do not add up are refused with the count. */
static void svo_link_rebuilds_child_indices(void) {
  const uint32_t depth = 9;
  const uint64_t want = 1300000;
  uint64_t *codes = (uint64_t *)malloc(want * sizeof *codes), n = 0, st = 0x2545f4914f6cdd1dull;
  for (uint64_t i = 0; i < want; i++) codes[i] = (check_xorshift(&st) ^ (uint64_t)check_xorshift(&st) << 32) % ((uint64_t)1 << 27);
  qsort(codes, want, sizeof *codes, cmp_code);
  for (uint64_t i = 0; i < want; i++)
    if (n == 0 || codes[i] != codes[n - 1]) codes[n++] = codes[i];
  vx_octree t;
  CHECK(build(depth, codes, n, &t) == VX_OK);
  CHECK(t.level_count[depth - 1] > ((uint64_t)1 << 20));
  uint32_t *child = (uint32_t *)malloc(t.node_count * sizeof *child);
  for (uint64_t i = 0; i < t.node_count; i++) {
    child[i] = t.nodes[i].child;
    t.nodes[i].child = 12345;
  }
  vx_error e;
  CHECK_MSG(vx_octree_link(&t, &e) == VX_OK, "%s", e.msg);
  uint64_t same = 0;
  for (uint64_t i = 0; i < t.node_count; i++) same += t.nodes[i].child == child[i];
  CHECK_MSG(same == t.node_count, "%llu of %llu child indices as built", (unsigned long long)same,
            (unsigned long long)t.node_count);
  CHECK(vx_octree_validate(&t, NULL) == VX_OK);
  /* a bit more, then a bit less, in the middle of level depth - 1 */
  vx_node *mid = &t.nodes[t.level_first[depth - 1] + t.level_count[depth - 1] / 2];
  while (vx_popcount8(vx_node_mask(mid->info)) < 2) mid++; /* one with two children or more */
  const uint32_t info = mid->info, mask = vx_node_mask(info);
  const uint32_t more = mask | (~mask & (0u - ~mask) & 0xffu), less = mask & (mask - 1u);
  mid->info = (info & ~0xffu) | more;
  CHECK(vx_octree_link(&t, &e) == VX_ERR_CORRUPT && strstr(e.msg, "more children than level 9"));
  mid->info = (info & ~0xffu) | less;
  CHECK(vx_octree_link(&t, &e) == VX_ERR_CORRUPT && strstr(e.msg, "children but level 9 holds"));
  mid->info = info;
  free(child);
  free(codes);
  vx_octree_free(&t);
}

static void svo_morton_round_trip(void) {
  for (uint32_t i = 0; i < 1000; i++) {
    uint32_t x = (i * 7919u) & 0x3fff, y = (i * 104729u) & 0x3fff, z = (i * 1299709u) & 0x3fff;
    uint32_t a, b, c;
    vx_morton_decode(vx_morton_encode(x, y, z), &a, &b, &c);
    CHECK(a == x && b == y && c == z);
  }
  CHECK(vx_morton_encode(1, 0, 0) == 1 && vx_morton_encode(0, 1, 0) == 2 &&
        vx_morton_encode(0, 0, 1) == 4);
}

static void svo_err_code_is_upper_bound(void) {
  for (double e = 1e-4; e < 3e4; e *= 1.013) {
    uint32_t c = vx_err_encode(e);
    CHECK(vx_err_decode(c) >= e || c == 255);
    if (c > 1) CHECK(vx_err_decode(c - 1) < e);
  }
  CHECK(vx_err_encode(0.0) == 0 && vx_err_decode(0) == 0.0f);
}

static void svo_oct_normal_round_trip(void) {
  srand(3);
  double worst = 0;
  for (int i = 0; i < 10000; i++) {
    double v[3] = {rand() / (double)RAND_MAX - 0.5, rand() / (double)RAND_MAX - 0.5,
                   rand() / (double)RAND_MAX - 0.5};
    double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l < 1e-3) continue;
    float n[3];
    vx_oct_decode(vx_oct_encode(v[0], v[1], v[2]), n);
    double dot = (n[0] * v[0] + n[1] * v[1] + n[2] * v[2]) / l;
    double ang = acos(dot > 1 ? 1 : dot);
    if (ang > worst) worst = ang;
  }
  CHECK_MSG(worst < 1e-3, "worst angle %g rad", worst);
}

int main(void) {
  RUN(svo_build_rejects_empty);
  RUN(svo_build_one_voxel_has_one_node_per_level);
  RUN(svo_build_full_grid_counts);
  RUN(svo_build_rejects_unsorted);
  RUN(svo_build_random_sets_match_brute_force);
  RUN(svo_link_rebuilds_child_indices);
  RUN(svo_morton_round_trip);
  RUN(svo_err_code_is_upper_bound);
  RUN(svo_oct_normal_round_trip);
  return check_summary();
}
