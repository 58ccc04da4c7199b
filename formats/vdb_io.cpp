/* SPDX-License-Identifier: Apache-2.0 */
/* vdb_io.cpp - OpenVDB level sets out and in (the only file that includes libopenvdb).
 *
 * Out (vx_vdb_write): an openvdb::FloatGrid with a linear transform (voxel size h, translated to
 * the tree's origin), class level set, the grid points' values as world distances, the tree's
 * inactive values signed by tools::signedFloodFill, written through io::Archive's seekable writer
 * (grid offsets included, the layout io::File writes, OpenVDB's default compression) into memory
 * and from there to the atomic writer: vdb_print, pyopenvdb, Houdini and Blender read it. A
 * coloured tree adds a Vec3SGrid "Cd" (linear rgb) on the same active voxels.
 *
 * In (vx_vdb_surface_read, vdb_read.h documents the mapping and resampling): io::File reads only
 * the grid named, every property we rely on is checked (value type, class, linear transform,
 * finite positive voxel size and background, non-empty active box). Then up to three passes,
 * each over work shared among threads by a counter (sys/system.h's vx_parallel), each thread with
 * its own accessor and output:
 *   BOUNDS      the box of the file's surface cells (the mapping depends on it);
 *   EXACT       (the file's own voxels) the surface cells themselves, values copied; or
 *   CANDIDATES  our cells that the file's surface cells touch, then
 *   SAMPLE      those candidates, corners sampled trilinearly, kept when they are surface cells.
 * The passes over the file read, per leaf, the values of its 8^3 points and one layer of
 * neighbours into a 10^3 block once and test every cell with its minimum corner at the leaf's
 * points or one below (cells between leaves are seen from both sides and merged by the sort).
 * OpenVDB throws on bad input: everything is inside try/catch.
 */
#include <openvdb/openvdb.h>
#include <openvdb/io/Archive.h>
#include <openvdb/io/File.h>
#include <openvdb/tools/FastSweeping.h>
#include <openvdb/tools/Interpolation.h>
#include <openvdb/tools/SignedFloodFill.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "sys/atomic_file.h"
#include "formats/grid_export.h"
#include "formats/vdb_read.h"
#include "sys/system.h"

namespace {

/* io::Archive writes grid offsets only to a seekable stream; io::Stream passes seekable = false,
 * io::File writes to a path itself. This gives the seekable layout in memory. */
class MemoryArchive : public openvdb::io::Archive {
 public:
  void writeSeekable(std::ostream &os, const openvdb::GridCPtrVec &grids) const {
    openvdb::io::Archive::write(os, grids, /*seekable=*/true, openvdb::MetaMap());
  }
};

}  // namespace

extern "C" int vx_vdb_write_available(void) { return 1; }
extern "C" int vx_vdb_read_available(void) { return 1; }

extern "C" vx_status vx_vdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes,
                                  vx_error *err) {
  *bytes = 0;
  std::string data;
  try {
    openvdb::initialize();
    const float h = (float)g->h;
    openvdb::FloatGrid::Ptr grid = openvdb::FloatGrid::create(g->band * h);
    openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(g->h);
    xf->postTranslate(openvdb::Vec3d(g->origin[0], g->origin[1], g->origin[2]));
    grid->setTransform(xf);
    grid->setGridClass(openvdb::GRID_LEVEL_SET);
    grid->setName(g->name);
    openvdb::FloatGrid::Accessor acc = grid->getAccessor();
    for (uint64_t i = 0; i < g->count; i++) {
      uint32_t x, y, z;
      vx_morton_decode(g->keys[i], &x, &y, &z);
      const int p = (int)g->pad;
      acc.setValue(openvdb::Coord((int)x - p, (int)y - p, (int)z - p), g->values[i] * h);
    }
    openvdb::tools::signedFloodFill(grid->tree());
    std::ostringstream os(std::ios_base::out | std::ios_base::binary);
    openvdb::GridCPtrVec grids;
    grids.push_back(grid);
    if (g->rgb) {
      /* Cd: linear colour on the level set's points (Houdini's name and convention) */
      openvdb::Vec3SGrid::Ptr cd = openvdb::Vec3SGrid::create(openvdb::Vec3s(0.0f));
      cd->setTransform(xf);
      cd->setName("Cd");
      cd->setVectorType(openvdb::VEC_INVARIANT);
      openvdb::Vec3SGrid::Accessor ca = cd->getAccessor();
      for (uint64_t i = 0; i < g->count; i++) {
        uint32_t x, y, z;
        vx_morton_decode(g->keys[i], &x, &y, &z);
        const int p = (int)g->pad;
        const float *c = g->rgb + 3 * i;
        ca.setValue(openvdb::Coord((int)x - p, (int)y - p, (int)z - p),
                    openvdb::Vec3s(c[0], c[1], c[2]));
      }
      grids.push_back(cd);
    }
    MemoryArchive().writeSeekable(os, grids);
    if (!os) return vx_error_set(err, VX_ERR_IO, "OpenVDB: serializing the grid failed");
    data = os.str();
  } catch (const std::bad_alloc &) {
    return vx_error_set(err, VX_ERR_NOMEM, "OpenVDB: out of memory building the grid");
  } catch (const std::exception &e) {
    return vx_error_set(err, VX_ERR_FORMAT, "OpenVDB: %s", e.what());
  }
  vx_status s = vx_atomic_write_file(path, data.data(), data.size(), err);
  if (s == VX_OK) *bytes = data.size();
  return s;
}

/* ---- reading ------------------------------------------------------------------------------- */

namespace {

struct cell_rec {
  uint64_t code;
  vx_voxel v;
};

/* A growing per-thread array of T (vx_realloc). */
template <typename T> struct out_buf {
  T *p = nullptr;
  size_t n = 0, cap = 0;
  bool push(const T &v) {
    if (n == cap) {
      size_t c = cap ? 2 * cap : 4096;
      T *q = (T *)vx_realloc(p, c * sizeof(T));
      if (!q) return false;
      p = q;
      cap = c;
    }
    p[n++] = v;
    return true;
  }
};

enum scan_mode { BOUNDS, EXACT, CANDIDATES, SAMPLE };

struct scan_ctx {
  scan_mode mode;
  const openvdb::FloatGrid *grid;
  std::vector<const openvdb::FloatTree::LeafNodeType *> leaves;
  openvdb::Coord off;   /* EXACT: grid index = our point + off */
  int32_t res;
  double origin[3], scale, inv_scale;
  float band;
  float near_src;       /* a voxel of the file's grid (straddles) */
  const uint64_t *cand = nullptr; /* SAMPLE: the candidate cells (vx_malloc) */
  size_t ncand = 0;
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  std::atomic<int> slots{0};
  out_buf<cell_rec> cells[256];
  out_buf<uint64_t> codes[256];
  int64_t bmin[256][3], bmax[256][3]; /* BOUNDS: the straddling cells' box, per thread */
  double m_abs[3][3];   /* CANDIDATES: |d index_i / d world_j| of the file's transform */
};

using box_sampler =
    openvdb::tools::GridSampler<openvdb::FloatGrid::ConstAccessor, openvdb::tools::BoxSampler>;

int cmp_rec(const void *a, const void *b) {
  uint64_t x = ((const cell_rec *)a)->code, y = ((const cell_rec *)b)->code;
  return x < y ? -1 : x > y;
}

int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A surface cell: its corners straddle zero (some < 0, some >= 0) and one of them lies within
 * near (a voxel) of zero. A cell of a distance field that the surface crosses has a corner within
 * sqrt(3)/2 voxel of it; corners that all sit far out are a sign flip between clamped values (a
 * damaged or inconsistent band), not a surface. */
bool straddles(const float f[8], float near) {
  int neg = 0, pos = 0, close = 0;
  for (int k = 0; k < 8; k++) {
    neg |= f[k] < 0.0f;
    pos |= f[k] >= 0.0f;
    close |= std::fabs(f[k]) <= near;
  }
  return neg && pos && close;
}

bool emit(scan_ctx *c, int slot, int64_t gx, int64_t gy, int64_t gz, const float f[8]) {
  cell_rec r;
  r.code = vx_morton_encode((uint32_t)gx, (uint32_t)gy, (uint32_t)gz);
  for (int k = 0; k < 8; k++) r.v.c[k] = vx_corner_quantize((double)f[k] * c->inv_scale, c->band);
  return c->cells[slot].push(r);
}

/* One leaf of the file's grid, its cells (minimum corner at the leaf's points or one below) that
 * straddle zero. BOUNDS: their box. EXACT: they are ours, values copied. CANDIDATES: the cells of
 * ours that the world box of each touches. */
/* CANDIDATES when our cells are smaller than the file's: the cells of box [a, b] (ours) that
 * may straddle zero, found by subdividing it. The sampled field is the trilinear interpolant of
 * the file's values, whose derivative along index axis i is at most L[i] (the largest difference
 * along an i edge of the file cells under the box: in a cell, df/dx_i interpolates the cell's four
 * i-edge differences). So over the box f stays within dev = sum_i L_i * (largest index offset along
 * i from the box's centre) of its value at the centre; when |f(centre)| exceeds that (with a
 * margin for rounding), f has one sign in the whole box and none of its cells has corners on both
 * sides: the box is dropped. The cells that remain are the candidates the enumeration of every
 * cell gave, less only cells that cannot straddle, so the result is the same; the work follows the
 * surface (about k^2 log k cells per file cell upsampled k times) instead of its volume (k^3). */
bool refine(scan_ctx *c, int slot, box_sampler &sampler, const double L[3], double slack,
            const int64_t a[3], const int64_t b[3]) {
  double hw[3];
  openvdb::Vec3d w;
  for (int e = 0; e < 3; e++) {
    hw[e] = 0.5 * (double)(b[e] - a[e] + 1) * c->scale;
    w[e] = c->origin[e] + 0.5 * (double)(a[e] + b[e] + 1) * c->scale;
  }
  double dev = 0.0;
  for (int i = 0; i < 3; i++)
    dev += L[i] * (c->m_abs[i][0] * hw[0] + c->m_abs[i][1] * hw[1] + c->m_abs[i][2] * hw[2]);
  const double f = sampler.wsSample(w);
  if (std::fabs(f) > dev * 1.001 + slack) return true;
  if (a[0] == b[0] && a[1] == b[1] && a[2] == b[2])
    return c->codes[slot].push(vx_morton_encode((uint32_t)a[0], (uint32_t)a[1], (uint32_t)a[2]));
  int64_t lo[2][3], hi[2][3];
  int n[3];
  for (int e = 0; e < 3; e++) {
    const int64_t mid = a[e] + (b[e] - a[e]) / 2;
    n[e] = b[e] > a[e] ? 2 : 1;
    lo[0][e] = a[e];
    hi[0][e] = n[e] == 2 ? mid : b[e];
    lo[1][e] = mid + 1;
    hi[1][e] = b[e];
  }
  for (int z = 0; z < n[2]; z++)
    for (int y = 0; y < n[1]; y++)
      for (int x = 0; x < n[0]; x++) {
        const int64_t ca[3] = {lo[x][0], lo[y][1], lo[z][2]};
        const int64_t cb[3] = {hi[x][0], hi[y][1], hi[z][2]};
        if (!refine(c, slot, sampler, L, slack, ca, cb)) return false;
      }
  return true;
}

/* The file values' largest differences along each index axis (L) and largest magnitude over the
 * points of the index box that holds our cells [g0, g1], then refine(). */
bool refine_top(scan_ctx *c, int slot, openvdb::FloatGrid::ConstAccessor &acc,
                box_sampler &sampler, const int64_t g0[3], const int64_t g1[3]) {
  const openvdb::math::Transform &xf = c->grid->constTransform();
  double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
  for (int k = 0; k < 8; k++) {
    openvdb::Vec3d w(c->origin[0] + (double)((k & 1) ? g1[0] + 1 : g0[0]) * c->scale,
                     c->origin[1] + (double)((k >> 1 & 1) ? g1[1] + 1 : g0[1]) * c->scale,
                     c->origin[2] + (double)((k >> 2 & 1) ? g1[2] + 1 : g0[2]) * c->scale);
    openvdb::Vec3d q = xf.worldToIndex(w);
    for (int e = 0; e < 3; e++) {
      lo[e] = std::min(lo[e], q[e]);
      hi[e] = std::max(hi[e], q[e]);
    }
  }
  int32_t i0[3], i1[3];
  for (int e = 0; e < 3; e++) {
    i0[e] = (int32_t)std::floor(lo[e]);
    i1[e] = (int32_t)std::ceil(hi[e]) + 1; /* the sampler's upper neighbour of an integer index */
    if (i1[e] - i0[e] > 16) { /* a strongly sheared transform: every cell, as for downsampling */
      for (int64_t x = g0[0]; x <= g1[0]; x++)
        for (int64_t y = g0[1]; y <= g1[1]; y++)
          for (int64_t z = g0[2]; z <= g1[2]; z++)
            if (!c->codes[slot].push(vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z)))
              return false;
      return true;
    }
  }
  double L[3] = {0.0, 0.0, 0.0}, vmax = 0.0;
  for (int32_t x = i0[0]; x <= i1[0]; x++)
    for (int32_t y = i0[1]; y <= i1[1]; y++)
      for (int32_t z = i0[2]; z <= i1[2]; z++) {
        const double v = acc.getValue(openvdb::Coord(x, y, z));
        vmax = std::max(vmax, std::fabs(v));
        const int32_t q[3] = {x, y, z};
        for (int e = 0; e < 3; e++) {
          if (q[e] >= i1[e]) continue;
          openvdb::Coord n(x, y, z);
          n[e] += 1;
          L[e] = std::max(L[e], std::fabs(acc.getValue(n) - v));
        }
      }
  /* float samples round to about 1e-7 of the values they mix: a margin well above that */
  return refine(c, slot, sampler, L, 1e-5 * vmax + 1e-30, g0, g1);
}

bool scan_leaf(scan_ctx *c, int slot, openvdb::FloatGrid::ConstAccessor &acc,
               box_sampler &sampler, const openvdb::Coord &o) {
  float block[10][10][10];
  for (int a = 0; a < 10; a++)
    for (int b = 0; b < 10; b++)
      for (int d = 0; d < 10; d++) block[a][b][d] = acc.getValue(o.offsetBy(a - 1, b - 1, d - 1));
  const openvdb::math::Transform &xf = c->grid->constTransform();
  for (int a = 0; a < 9; a++)
    for (int b = 0; b < 9; b++)
      for (int d = 0; d < 9; d++) {
        float f[8];
        for (int k = 0; k < 8; k++) f[k] = block[a + (k & 1)][b + (k >> 1 & 1)][d + (k >> 2 & 1)];
        if (!straddles(f, c->near_src)) continue;
        const int64_t i = (int64_t)o.x() + a - 1, j = (int64_t)o.y() + b - 1, l = (int64_t)o.z() + d - 1;
        if (c->mode == BOUNDS) {
          const int64_t q[3] = {i, j, l};
          for (int e = 0; e < 3; e++) {
            c->bmin[slot][e] = std::min(c->bmin[slot][e], q[e]);
            c->bmax[slot][e] = std::max(c->bmax[slot][e], q[e]);
          }
          continue;
        }
        if (c->mode == EXACT) {
          int64_t gx = i - c->off.x(), gy = j - c->off.y(), gz = l - c->off.z();
          if (gx < 0 || gy < 0 || gz < 0 || gx >= c->res || gy >= c->res || gz >= c->res) continue;
          if (!emit(c, slot, gx, gy, gz, f)) return false;
          continue;
        }
        double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
        for (int k = 0; k < 8; k++) {
          openvdb::Vec3d w = xf.indexToWorld(
              openvdb::Vec3d((double)(i + (k & 1)), (double)(j + (k >> 1 & 1)), (double)(l + (k >> 2 & 1))));
          for (int e = 0; e < 3; e++) {
            lo[e] = std::min(lo[e], w[e]);
            hi[e] = std::max(hi[e], w[e]);
          }
        }
        int64_t g0[3], g1[3];
        bool inside = true;
        for (int e = 0; e < 3; e++) {
          g0[e] = std::max<int64_t>(0, (int64_t)std::floor((lo[e] - c->origin[e]) / c->scale));
          g1[e] = std::min<int64_t>(c->res - 1, (int64_t)std::floor((hi[e] - c->origin[e]) / c->scale));
          inside = inside && g0[e] <= g1[e];
        }
        if (inside && (g1[0] - g0[0] > 1 || g1[1] - g0[1] > 1 || g1[2] - g0[2] > 1)) {
          if (!refine_top(c, slot, acc, sampler, g0, g1)) return false;
          continue;
        }
        for (int64_t x = g0[0]; inside && x <= g1[0]; x++)
          for (int64_t y = g0[1]; y <= g1[1]; y++)
            for (int64_t z = g0[2]; z <= g1[2]; z++)
              if (!c->codes[slot].push(vx_morton_encode((uint32_t)x, (uint32_t)y, (uint32_t)z)))
                return false;
      }
  return true;
}

/* SAMPLE: a candidate cell of ours, its corners sampled trilinearly from the file's grid. */
bool sample_cell(scan_ctx *c, int slot, box_sampler &sampler, uint64_t code) {
  uint32_t x, y, z;
  vx_morton_decode(code, &x, &y, &z);
  float f[8];
  for (int k = 0; k < 8; k++)
    f[k] = sampler.wsSample(openvdb::Vec3d(c->origin[0] + (x + (k & 1)) * c->scale,
                                           c->origin[1] + (y + (k >> 1 & 1)) * c->scale,
                                           c->origin[2] + (z + (k >> 2 & 1)) * c->scale));
  return !straddles(f, (float)c->scale) || emit(c, slot, x, y, z, f);
}

void *scan_worker(void *arg) {
  scan_ctx *c = (scan_ctx *)arg;
  int slot = c->slots.fetch_add(1);
  if (slot >= 256) return nullptr;
  try {
    openvdb::FloatGrid::ConstAccessor acc = c->grid->getConstAccessor();
    box_sampler sampler(acc, c->grid->constTransform());
    const size_t total = c->mode == SAMPLE ? c->ncand : c->leaves.size();
    for (;;) {
      size_t i = c->next.fetch_add(1);
      if (i >= total || c->failed.load()) break;
      bool ok = c->mode == SAMPLE ? sample_cell(c, slot, sampler, c->cand[i])
                                  : scan_leaf(c, slot, acc, sampler, c->leaves[i]->origin());
      if (!ok) {
        c->failed.store(1);
        break;
      }
    }
  } catch (...) {
    c->failed.store(2);
  }
  return nullptr;
}

void run_scan(scan_ctx *c, int threads) {
  c->next.store(0);
  c->slots.store(0);
  for (int i = 0; i < 256; i++)
    for (int e = 0; e < 3; e++) {
      c->bmin[i][e] = INT64_MAX;
      c->bmax[i][e] = INT64_MIN;
    }
  vx_parallel(vx_thread_count(threads, 256), scan_worker, c);
}

uint32_t pow2_at_least(double n) {
  uint32_t r = 2;
  while ((double)r < n && r < (1u << 30)) r *= 2;
  return r;
}

bool near_rel(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); }

/* The cells the threads found, merged, sorted, duplicates dropped, into out. */
vx_status gather(scan_ctx *c, const char *path, const char *name, uint64_t mem_limit,
                 vx_vdb_surface *out, vx_error *err) {
  size_t total = 0;
  for (int i = 0; i < 256; i++) total += c->cells[i].n;
  vx_status st = VX_OK;
  cell_rec *all = nullptr;
  if ((uint64_t)total * 2 * sizeof(cell_rec) > mem_limit) {
    char lim[32];
    st = vx_error_set(err, VX_ERR_LIMIT, "%s: %llu surface voxels do not fit the memory limit (%s)",
                      path, (unsigned long long)total, vx_bytes_text((double)mem_limit, lim, sizeof lim));
  } else if (total == 0) {
    st = vx_error_set(err, VX_ERR_EMPTY, "%s: grid '%s' has no zero crossing inside the grid", path,
                      name);
  } else if (!(all = (cell_rec *)vx_malloc(total * sizeof(cell_rec)))) {
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu surface voxels",
                      (unsigned long long)total);
  } else {
    size_t at = 0;
    for (int i = 0; i < 256; i++) { /* each thread's buffer freed once copied */
      if (c->cells[i].n) std::memcpy(all + at, c->cells[i].p, c->cells[i].n * sizeof(cell_rec));
      at += c->cells[i].n;
      vx_free(c->cells[i].p);
      c->cells[i] = out_buf<cell_rec>();
    }
  }
  for (int i = 0; i < 256; i++) {
    vx_free(c->cells[i].p);
    c->cells[i] = out_buf<cell_rec>();
  }
  if (st != VX_OK) return st;
  qsort(all, total, sizeof(cell_rec), cmp_rec);
  size_t n = 0;
  for (size_t i = 0; i < total; i++)
    if (n == 0 || all[i].code != all[n - 1].code) all[n++] = all[i];
  /* the codes apart, the corners packed in place at the front of the records (an 8-byte write
   * never passes the 16-byte record it reads), then the records' memory shrunk to them */
  out->codes = (uint64_t *)vx_malloc(n * sizeof(uint64_t));
  if (!out->codes) {
    vx_free(all);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu surface voxels",
                        (unsigned long long)n);
  }
  vx_voxel *packed = (vx_voxel *)(void *)all;
  for (size_t i = 0; i < n; i++) {
    out->codes[i] = all[i].code;
    const vx_voxel v = all[i].v;
    std::memcpy(packed + i, &v, sizeof v);
  }
  vx_voxel *shrunk = (vx_voxel *)vx_realloc(all, n * sizeof(vx_voxel));
  out->voxels = shrunk ? shrunk : packed;
  out->count = n;
  return VX_OK;
}

/* The candidate cells the threads found, merged, sorted, unique, into c->cand (vx_malloc). */
vx_status gather_candidates(scan_ctx *c, const char *path, uint64_t mem_limit, vx_error *err) {
  size_t total = 0;
  for (int i = 0; i < 256; i++) total += c->codes[i].n;
  uint64_t *all = nullptr;
  vx_status st = VX_OK;
  if ((uint64_t)total * 2 * sizeof(uint64_t) > mem_limit) {
    char lim[32];
    st = vx_error_set(err, VX_ERR_LIMIT, "%s: %llu candidate voxels do not fit the memory limit "
                      "(%s)", path, (unsigned long long)total,
                      vx_bytes_text((double)mem_limit, lim, sizeof lim));
  } else if (!(all = (uint64_t *)vx_malloc((total ? total : 1) * sizeof(uint64_t)))) {
    st = vx_error_set(err, VX_ERR_NOMEM, "out of memory for %llu candidate voxels",
                      (unsigned long long)total);
  } else {
    size_t at = 0;
    for (int i = 0; i < 256; i++) { /* each thread's buffer freed once copied */
      if (c->codes[i].n) std::memcpy(all + at, c->codes[i].p, c->codes[i].n * sizeof(uint64_t));
      at += c->codes[i].n;
      vx_free(c->codes[i].p);
      c->codes[i] = out_buf<uint64_t>();
    }
  }
  for (int i = 0; i < 256; i++) {
    vx_free(c->codes[i].p);
    c->codes[i] = out_buf<uint64_t>();
  }
  if (st != VX_OK) return st;
  qsort(all, total, sizeof(uint64_t), cmp_u64);
  size_t n = 0;
  for (size_t i = 0; i < total; i++)
    if (n == 0 || all[i] != all[n - 1]) all[n++] = all[i];
  uint64_t *shrunk = (uint64_t *)vx_realloc(all, (n ? n : 1) * sizeof(uint64_t));
  if (shrunk) all = shrunk;
  c->cand = all;
  c->ncand = n;
  return VX_OK;
}

}  // namespace

extern "C" vx_status vx_vdb_surface_read(const char *path, const char *name, uint32_t resolution,
                                         float band, int threads, uint64_t mem_limit,
                                         vx_vdb_surface *out, vx_error *err) {
  std::memset(out, 0, sizeof *out);
  const uint32_t max_res = 1u << VX_MAX_DEPTH;
  if (resolution && (resolution < 2 || resolution > max_res || (resolution & (resolution - 1))))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "resolution %u is not a power of two from 2 to %u",
                        resolution, max_res);
  if (!(band >= 1.0f && band <= 64.0f))
    return vx_error_set(err, VX_ERR_INVALID_ARG, "band %g outside 1..64 voxels", (double)band);
  if (!mem_limit) mem_limit = vx_default_mem_limit();
  scan_ctx ctx;
  vx_status st = VX_OK;
  try {
    openvdb::initialize();
    openvdb::io::File file(path);
    file.open(/*delayLoad=*/false);
    if (!file.hasGrid(name)) return vx_error_set(err, VX_ERR_FORMAT, "%s: no grid named '%s'", path, name);
    openvdb::GridBase::Ptr base = file.readGrid(name);
    file.close();
    openvdb::FloatGrid::Ptr grid = openvdb::gridPtrCast<openvdb::FloatGrid>(base);
    if (!grid)
      return vx_error_set(err, VX_ERR_FORMAT, "%s: grid '%s' holds %s values, not float", path,
                          name, base ? base->valueType().c_str() : "no");
    if (grid->getGridClass() != openvdb::GRID_LEVEL_SET)
      return vx_error_set(err, VX_ERR_FORMAT, "%s: grid '%s' is a %s, not a level set", path, name,
                          openvdb::GridBase::gridClassToString(grid->getGridClass()).c_str());
    const openvdb::math::Transform &xf = grid->constTransform();
    if (!xf.isLinear())
      return vx_error_set(err, VX_ERR_FORMAT, "%s: grid '%s' has a frustum (non-linear) transform",
                          path, name);
    const float bg = grid->background();
    if (!(bg > 0.0f) || !std::isfinite(bg))
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: grid '%s' has background %g: not a level set's "
                          "(positive, finite)", path, name, (double)bg);
    const openvdb::CoordBBox bb = grid->evalActiveVoxelBoundingBox();
    if (bb.empty())
      return vx_error_set(err, VX_ERR_EMPTY, "%s: grid '%s' has no active voxels", path, name);
    const openvdb::Vec3d o = xf.indexToWorld(openvdb::Vec3d(0.0));
    const openvdb::Vec3d ex = xf.indexToWorld(openvdb::Vec3d(1, 0, 0)) - o;
    const openvdb::Vec3d ey = xf.indexToWorld(openvdb::Vec3d(0, 1, 0)) - o;
    const openvdb::Vec3d ez = xf.indexToWorld(openvdb::Vec3d(0, 0, 1)) - o;
    const double h = ex.length();
    if (!(h > 0.0) || !std::isfinite(h) || !(ey.length() > 0.0) || !(ez.length() > 0.0) ||
        !std::isfinite(ey.length()) || !std::isfinite(ez.length()))
      return vx_error_set(err, VX_ERR_CORRUPT, "%s: grid '%s' has a degenerate transform", path, name);
    const double hmin = std::min(h, std::min(ey.length(), ez.length()));
    const double hmax = std::max(h, std::max(ey.length(), ez.length()));
    const bool aligned = ex[1] == 0.0 && ex[2] == 0.0 && ey[0] == 0.0 && ey[2] == 0.0 &&
                         ez[0] == 0.0 && ez[1] == 0.0 && ex[0] > 0.0 && near_rel(ey[1], h) &&
                         near_rel(ez[2], h);
    /* the surface's box: the cells that straddle zero, in the file's index space */
    ctx.near_src = (float)hmax;
    ctx.mode = BOUNDS;
    ctx.grid = grid.get();
    grid->tree().getNodes(ctx.leaves);
    run_scan(&ctx, threads);
    if (ctx.failed.load())
      return vx_error_set(err, VX_ERR_FORMAT, "%s: reading grid '%s' failed", path, name);
    int64_t smin[3] = {INT64_MAX, INT64_MAX, INT64_MAX}, smax[3] = {INT64_MIN, INT64_MIN, INT64_MIN};
    for (int i = 0; i < 256; i++)
      for (int e = 0; e < 3; e++) {
        smin[e] = std::min(smin[e], ctx.bmin[i][e]);
        smax[e] = std::max(smax[e], ctx.bmax[i][e]);
      }
    if (smin[0] > smax[0])
      return vx_error_set(err, VX_ERR_EMPTY, "%s: grid '%s' has no zero crossing", path, name);
    /* its world bounds (the 8 corners of the cells' box through the transform) */
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (int k = 0; k < 8; k++) {
      openvdb::Vec3d p((double)((k & 1) ? smax[0] + 1 : smin[0]),
                       (double)((k >> 1 & 1) ? smax[1] + 1 : smin[1]),
                       (double)((k >> 2 & 1) ? smax[2] + 1 : smin[2]));
      openvdb::Vec3d w = xf.indexToWorld(p);
      for (int a = 0; a < 3; a++) {
        lo[a] = std::min(lo[a], w[a]);
        hi[a] = std::max(hi[a], w[a]);
      }
    }
    for (int a = 0; a < 3; a++)
      if (!std::isfinite(lo[a]) || !std::isfinite(hi[a]))
        return vx_error_set(err, VX_ERR_CORRUPT, "%s: grid '%s' lies outside finite space", path, name);
    uint32_t res = resolution;
    ctx.band = band;
    if (aligned && res == 0) {
      /* the file's own voxels: the surface's cells, centred in the smallest power of two that
       * holds them; values copied */
      int64_t ext[3], emax = 0;
      for (int a = 0; a < 3; a++) {
        ext[a] = smax[a] + 1 - smin[a];
        emax = std::max(emax, ext[a]);
      }
      if (emax > (int64_t)max_res)
        return vx_error_set(err, VX_ERR_LIMIT, "%s: grid '%s' spans %lld voxels: more than %u; "
                            "choose a resolution to resample it", path, name, (long long)emax,
                            max_res);
      res = pow2_at_least((double)emax);
      for (int a = 0; a < 3; a++) ctx.off[a] = (int32_t)(smin[a] - ((int64_t)res - ext[a]) / 2);
      for (int a = 0; a < 3; a++) out->origin[a] = o[a] + h * (double)ctx.off[a];
      out->scale = h;
      ctx.mode = EXACT;
    } else {
      /* resampling: the world box into res^3 with one uniform scale, centred */
      double e = std::max(hi[0] - lo[0], std::max(hi[1] - lo[1], hi[2] - lo[2]));
      if (res == 0) {
        if (e / hmin + 2.0 > (double)max_res)
          return vx_error_set(err, VX_ERR_LIMIT, "%s: grid '%s' spans %.0f voxels: more than %u; "
                              "choose a resolution to resample it", path, name, e / hmin, max_res);
        res = pow2_at_least(e / hmin + 2.0);
        out->scale = hmin;
      } else {
        out->scale = (e > 0.0 ? e : h) / (double)res;
      }
      for (int a = 0; a < 3; a++)
        out->origin[a] = lo[a] - ((double)res * out->scale - (hi[a] - lo[a])) / 2.0;
      /* our corners lie up to sqrt(3) of our voxels from the surface: widen the file's band to
       * reach them (fast sweeping keeps its signs), at most 32 of its voxels */
      const double need = std::sqrt(3.0) * out->scale + hmax;
      if ((double)bg < need) {
        int more = (int)std::ceil((need - (double)bg) / hmin) + 1;
        if (more > 32) more = 32;
        grid = openvdb::tools::dilateSdf(*grid, more, openvdb::tools::NN_FACE_EDGE_VERTEX);
        out->widened = more;
      }
      out->resampled = 1;
      ctx.mode = CANDIDATES;
      const openvdb::Vec3d q0 = xf.worldToIndex(openvdb::Vec3d(0.0));
      for (int j = 0; j < 3; j++) {
        openvdb::Vec3d e(0.0);
        e[j] = 1.0;
        const openvdb::Vec3d q = xf.worldToIndex(e) - q0;
        for (int i = 0; i < 3; i++) ctx.m_abs[i][j] = std::fabs(q[i]);
      }
    }
    out->src_voxel = h;
    while ((1u << out->depth) < res) out->depth++;
    ctx.grid = grid.get();
    ctx.leaves.clear();
    ctx.res = (int32_t)res;
    ctx.scale = out->scale;
    ctx.inv_scale = 1.0 / out->scale;
    for (int a = 0; a < 3; a++) ctx.origin[a] = out->origin[a];
    grid->tree().getNodes(ctx.leaves);
    run_scan(&ctx, threads);
    if (ctx.mode == CANDIDATES && !ctx.failed.load()) {
      st = gather_candidates(&ctx, path, mem_limit, err);
      ctx.mode = SAMPLE;
      if (st == VX_OK) run_scan(&ctx, threads);
      vx_free((void *)ctx.cand); /* before the cells are gathered */
      ctx.cand = nullptr;
      ctx.ncand = 0;
    }
    if (st == VX_OK && ctx.failed.load())
      st = ctx.failed.load() == 1 ? vx_error_set(err, VX_ERR_NOMEM, "out of memory collecting the "
                                                 "surface voxels")
                                  : vx_error_set(err, VX_ERR_FORMAT, "%s: reading grid '%s' "
                                                 "failed", path, name);
    if (st == VX_OK) st = gather(&ctx, path, name, mem_limit, out, err);
  } catch (const std::bad_alloc &) {
    st = vx_error_set(err, VX_ERR_NOMEM, "%s: out of memory reading the grid", path);
  } catch (const std::exception &e) {
    st = vx_error_set(err, VX_ERR_CORRUPT, "%s: OpenVDB cannot read it: %s", path, e.what());
  }
  for (int i = 0; i < 256; i++) {
    vx_free(ctx.cells[i].p);
    vx_free(ctx.codes[i].p);
  }
  vx_free((void *)ctx.cand);
  if (st != VX_OK) vx_vdb_surface_free(out);
  return st;
}
