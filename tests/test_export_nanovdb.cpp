/* SPDX-License-Identifier: Apache-2.0 */
/* test_export_nanovdb.cpp - a .nvdb export read back by NanoVDB's own reader (nanovdb::io::readGrid
 * from the NanoVDB headers), compared with values computed here from the tree's raw voxels and
 * nodes (svo/node.h decoding), not from the exporter's code:
 * - the grid is a float level set named as asked, voxel size and origin the tree's;
 * - every corner of every surface voxel is active with exactly the dequantized corner value times
 *   the voxel size (finest level), or the mean of the level-L planes at that point (--lod L);
 * - every other active value is the band's extension: within +-band voxels and one voxel further
 *   from zero than an active 6-neighbour of the same sign;
 * - inactive values are +-background, negative at the sphere's centre, positive at the corners.
 */
#include <nanovdb/util/IO.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "voxlod.h"
#include "svo/node.h"

static int failures = 0, checks = 0;
#define EXPECT(c, ...)                                                        \
  do {                                                                        \
    checks++;                                                                 \
    if (!(c)) {                                                               \
      failures++;                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #c);   \
      fprintf(stderr, __VA_ARGS__);                                           \
      fprintf(stderr, "\n");                                                  \
    }                                                                         \
  } while (0)

/* A UV sphere of radius 0.4 at the origin, shared vertices. */
static vx_tree *sphere_tree(uint32_t res) {
  const int nu = 48, nv = 24;
  std::vector<float> v;
  std::vector<uint32_t> idx;
  for (int j = 0; j <= nv; j++)
    for (int i = 0; i < nu; i++) {
      double th = M_PI * j / nv, ph = 2 * M_PI * i / nu;
      v.push_back((float)(0.4 * sin(th) * cos(ph)));
      v.push_back((float)(0.4 * sin(th) * sin(ph)));
      v.push_back((float)(0.4 * cos(th)));
    }
  for (int j = 0; j < nv; j++)
    for (int i = 0; i < nu; i++) {
      uint32_t a = j * nu + i, b = j * nu + (i + 1) % nu, c = a + nu, d = b + nu;
      idx.insert(idx.end(), {a, c, b, b, c, d});
    }
  vx_mesh *m = nullptr;
  vx_error e;
  vx_mesh_from_arrays(v.data(), v.size() / 3, idx.data(), idx.size() / 3, &m, &e);
  vx_convert_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.device = VX_DEVICE_CPU;
  vx_conversion *b = nullptr;
  if (vx_convert(m, &o, &b, &e) != VX_OK) fprintf(stderr, "convert: %s\n", e.msg);
  vx_mesh_free(m);
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  return t;
}

struct cell {
  uint32_t x, y, z;
  uint64_t index; /* node (global) or voxel index */
};

/* The cells of level L, walking the node arrays. */
static std::vector<cell> level_cells(const vx_tree *t, uint32_t L, uint32_t depth) {
  const vx_node *nodes = (const vx_node *)vx_tree_nodes(t, nullptr);
  std::vector<cell> cur{{0, 0, 0, 0}};
  for (uint32_t l = 0; l < L; l++) {
    std::vector<cell> next;
    for (const cell &c : cur) {
      const vx_node &n = nodes[c.index];
      uint32_t mask = vx_node_mask(n.info);
      for (uint32_t s = 0; s < 8; s++)
        if (mask >> s & 1)
          next.push_back({2 * c.x + (s & 1), 2 * c.y + (s >> 1 & 1), 2 * c.z + (s >> 2 & 1),
                          vx_child_index(n.child, mask, s)});
    }
    cur.swap(next);
  }
  (void)depth;
  return cur;
}

typedef std::map<std::tuple<int, int, int>, std::pair<double, int>> point_map;

static void check_grid(const char *path, const vx_tree_info &ti, uint32_t L, const point_map &want,
                       float band, const char *name) {
  auto handle = nanovdb::io::readGrid(path);
  const nanovdb::NanoGrid<float> *g = handle.grid<float>();
  EXPECT(g != nullptr, "%s: no float grid", path);
  if (!g) return;
  const double h = ti.scale * std::ldexp(1.0, (int)(ti.depth - L));
  EXPECT(g->gridClass() == nanovdb::GridClass::LevelSet, "class %d", (int)g->gridClass());
  EXPECT(std::string(g->gridName()) == name, "name %s", g->gridName());
  EXPECT(std::fabs(g->voxelSize()[0] - h) <= 1e-12 * h, "voxel %g, want %g", g->voxelSize()[0], h);
  nanovdb::Vec3d o = g->indexToWorld(nanovdb::Vec3d(0.0));
  for (int k = 0; k < 3; k++) EXPECT(std::fabs(o[k] - ti.origin[k]) < 1e-9, "origin %d", k);
  auto acc = g->getAccessor();
  const float bg = (float)(band * (float)h);
  EXPECT(g->tree().background() == bg, "background %g want %g", g->tree().background(), bg);
  uint64_t wrong = 0, inactive = 0;
  for (const auto &kv : want) {
    nanovdb::Coord p(std::get<0>(kv.first), std::get<1>(kv.first), std::get<2>(kv.first));
    double v = kv.second.first / kv.second.second;
    v = v > band ? band : v < -band ? -band : v;
    float expect = (float)v * (float)h;
    if (!acc.isActive(p)) inactive++;
    else if (std::fabs(acc.getValue(p) - expect) > (L == ti.depth ? 0.0 : 1e-5 * h)) wrong++;
  }
  EXPECT(wrong == 0 && inactive == 0, "%llu values wrong, %llu inactive of %zu",
         (unsigned long long)wrong, (unsigned long long)inactive, want.size());
  /* the other active values: the band's extension */
  uint64_t active = 0, bad = 0;
  const int res = 1 << L, m = (int)std::ceil(band) + 1; /* the band reaches past the box */
  for (int x = -m; x <= res + m; x++)
    for (int y = -m; y <= res + m; y++)
      for (int z = -m; z <= res + m; z++) {
        nanovdb::Coord p(x, y, z);
        if (!acc.isActive(p)) {
          float v = acc.getValue(p);
          bad += std::fabs(v) != bg;
          continue;
        }
        active++;
        if (want.count(std::make_tuple(x, y, z))) continue;
        float v = acc.getValue(p);
        bool ok = std::fabs(v) <= bg * 1.000001f;
        bool step = false;
        for (int d = 0; d < 6; d++) {
          nanovdb::Coord q = p;
          q[d >> 1] += (d & 1) ? 1 : -1;
          if (!acc.isActive(q)) continue;
          float w = acc.getValue(q);
          step |= (w < 0) == (v < 0) && std::fabs(std::fabs(w) + (float)h - std::fabs(v)) <= 1e-5 * h;
        }
        bad += !(ok && (step || std::fabs(v) >= bg * 0.99999f));
      }
  EXPECT(bad == 0, "%llu band or background values wrong", (unsigned long long)bad);
  EXPECT(active == g->activeVoxelCount(), "active %llu", (unsigned long long)active);
  EXPECT(acc.getValue(nanovdb::Coord(res / 2, res / 2, res / 2)) < 0, "centre not inside");
  EXPECT(acc.getValue(nanovdb::Coord(0, 0, 0)) > 0, "corner not outside");
}

int main() {
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/test_export_tmp", VX_BUILD_DIR);
  mkdir(dir, 0755);
  vx_tree *t = sphere_tree(32);
  vx_tree_info ti;
  memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  vx_tree_get_info(t, &ti);
  const vx_node *nodes = (const vx_node *)vx_tree_nodes(t, nullptr);
  const vx_voxel *voxels = (const vx_voxel *)vx_tree_voxels(t, nullptr);

  /* the finest level: dequantized corners */
  snprintf(path, sizeof path, "%s/s.nvdb", dir);
  vx_export_opts o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  vx_error e;
  vx_status s = vx_tree_export(t, path, &o, nullptr, &e);
  EXPECT(s == VX_OK, "%s", e.msg);
  point_map want;
  for (const cell &c : level_cells(t, ti.depth, ti.depth))
    for (int k = 0; k < 8; k++) {
      auto key = std::make_tuple((int)c.x + (k & 1), (int)c.y + (k >> 1 & 1), (int)c.z + (k >> 2 & 1));
      want[key] = {vx_corner_value(voxels[c.index].c[k], ti.band), 1};
    }
  check_grid(path, ti, ti.depth, want, ti.band, "surface");

  /* level 3 (8^3) from the planes, another name and band */
  const uint32_t L = 3;
  snprintf(path, sizeof path, "%s/s3.nvdb", dir);
  o.levels = L + 1;
  o.band = 3.0f;
  o.grid_name = "lod3";
  s = vx_tree_export(t, path, &o, nullptr, &e);
  EXPECT(s == VX_OK, "%s", e.msg);
  want.clear();
  const double S = std::ldexp(1.0, (int)(ti.depth - L));
  for (const cell &c : level_cells(t, L, ti.depth)) {
    const vx_node &n = nodes[c.index];
    float nv[3];
    vx_oct_decode(n.normal, nv);
    for (int k = 0; k < 8; k++) {
      /* n . (u - 1/2) + d, u in node units: the plane in node sizes, which are the cut's cells */
      double u[3] = {(double)(k & 1), (double)(k >> 1 & 1), (double)(k >> 2 & 1)};
      double v = 0;
      for (int a = 0; a < 3; a++) v += nv[a] * (u[a] - 0.5);
      v += n.d;
      auto key = std::make_tuple((int)c.x + (k & 1), (int)c.y + (k >> 1 & 1), (int)c.z + (k >> 2 & 1));
      auto &w = want[key];
      w.first += v;
      w.second += 1;
    }
  }
  (void)S;
  check_grid(path, ti, L, want, 3.0f, "lod3");
  vx_tree_free(t);
  fprintf(stderr, "%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
