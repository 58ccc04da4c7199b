/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_bench.cpp - voxlod's dual contouring against OpenVDB's volumeToMesh on the same signed
 * distance field: triangles, time, and the two-sided Hausdorff distance (in voxels) to the source
 * mesh, one row per cut or adaptivity. Not part of the voxlod binary (bench/bench_mesh.sh runs
 * it); built when libopenvdb-dev is found.
 *
 * The same field: the tree's single-valued corner field (vx_dc_corner_field, the values our mesher
 * uses) becomes an OpenVDB FloatGrid with one voxel per grid point of the tree (voxel size = the
 * tree's finest voxel, world = origin + index * size, values in world units, the narrow band the
 * surface voxels' corners, background +band), signed-flood-filled so that the inside reads
 * negative, as a level set built by OpenVDB itself would be. volumeToMesh(grid, ..., isovalue 0,
 * adaptivity) is then OpenVDB's mesher at each adaptivity; its quads count as two triangles.
 *
 * usage: mesh_bench SOURCE_MESH TREE.svo [--cuts F,L7,E0.5,...] [--adaptivity 0,0.25,...]
 *                   [--samples N] [--threads N] [--save DIR] [--name NAME]
 * Cuts: F = finest, Ln = level n, En = error cut at n voxels. Output: a Markdown table on stdout,
 * one row per cut or adaptivity: triangles, seconds, the distance to the source (max over every
 * vertex and the N random points of each mesh, 99.9th percentile and mean over the random points,
 * both ways) and, for voxlod's cuts, the same against voxlod's full-detail mesh. Environment:
 * MESH_BENCH_WHERE=1 prints where the worst points lie, and the passes of each error cut.
 */
#include <openvdb/openvdb.h>
#include <openvdb/tools/SignedFloodFill.h>
#include <openvdb/tools/VolumeToMesh.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include "formats/mesh_export.h"
#include "formats/mesh_import.h"
#include "formats/svo_file.h"
#include "mesher/mesher.h"
#include "sys/system.h"
#include "bench/hausdorff.h"
}

namespace {

double now() { return vx_clock_seconds(); }

std::vector<std::string> split(const char *s) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *p = s; *p; p++) {
    if (*p == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/* Morton codes of the surface voxels, in the order of t->voxels. */
std::vector<uint64_t> voxel_codes(const vx_octree *t) {
  std::vector<uint64_t> cur(1, 0), next;
  for (uint32_t l = 0; l < t->depth; l++) {
    next.clear();
    for (uint64_t i = 0; i < cur.size(); i++) {
      uint32_t mask = vx_node_mask(t->nodes[t->level_first[l] + i].info);
      for (uint32_t s = 0; s < 8; s++)
        if (mask >> s & 1u) next.push_back(cur[i] << 3 | s);
    }
    cur.swap(next);
  }
  return cur;
}

struct result {
  std::string tool, setting;
  uint64_t tris, verts;
  double sec;
  vx_hd_result hd;   /* against the source mesh */
  vx_hd_result full; /* voxlod's cuts: against voxlod's full-detail mesh */
  bool has_full = false;
};

void print_row(const result &r, double voxel) {
  std::printf("| %s | %s | %llu | %.2f | %.3f | %.3f | %.3f |", r.tool.c_str(), r.setting.c_str(),
              (unsigned long long)r.tris, r.sec, r.hd.max / voxel, r.hd.p999 / voxel,
              r.hd.mean / voxel);
  if (r.has_full)
    std::printf(" %.3f | %.3f | %.3f |\n", r.full.max / voxel, r.full.p999 / voxel,
                r.full.mean / voxel);
  else
    std::printf(" - | - | - |\n");
  if (std::getenv("MESH_BENCH_WHERE"))
    std::fprintf(stderr,
                 "  %s %s: mesh->source %.3f, source->mesh %.3f voxels; worst at %g %g %g\n",
                 r.tool.c_str(), r.setting.c_str(), r.hd.max_ab / voxel, r.hd.max_ba / voxel,
                 r.hd.at[0], r.hd.at[1], r.hd.at[2]);
  if (std::getenv("MESH_BENCH_WHERE") && r.has_full)
    std::fprintf(stderr, "  %s %s: mesh->full %.3f, full->mesh %.3f voxels; worst at %g %g %g\n",
                 r.tool.c_str(), r.setting.c_str(), r.full.max_ab / voxel, r.full.max_ba / voxel,
                 r.full.at[0], r.full.at[1], r.full.at[2]);
  std::fflush(stdout);
}

bool measure(const vx_hd_mesh &src, const vx_hd_mesh &m, uint64_t samples, int threads,
             vx_hd_result *hd) {
  double lo[3], hi[3], lo2[3], hi2[3];
  vx_hd_bbox(&src, lo, hi);
  vx_hd_bbox(&m, lo2, hi2);
  double ext = 0.0;
  for (int i = 0; i < 3; i++) {
    lo[i] = std::min(lo[i], lo2[i]);
    hi[i] = std::max(hi[i], hi2[i]);
    ext = std::max(ext, hi[i] - lo[i]);
  }
  for (int i = 0; i < 3; i++) lo[i] -= 0.01 * ext, hi[i] += 0.01 * ext;
  return vx_hd_two_sided(&m, &src, lo, hi, samples, threads, hd) != 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: mesh_bench SOURCE_MESH TREE.svo [--cuts F,L7,E0.5] "
                         "[--adaptivity 0,0.5] [--samples N] [--threads N] [--save DIR]\n");
    return 2;
  }
  const char *src_path = argv[1], *svo_path = argv[2], *save = nullptr;
  std::vector<std::string> cuts = split("F,E0.25,E0.5,E1,E2,E4");
  std::vector<std::string> adapt = split("0,0.1,0.25,0.5,0.75,1");
  uint64_t samples = 1000000;
  int threads = vx_thread_count(0, 256);
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cuts")) cuts = split(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--adaptivity")) adapt = split(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--samples")) samples = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--save")) save = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  vx_error e;
  vx_soup soup;
  if (vx_soup_import(src_path, &soup, &e) != VX_OK) {
    std::fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  vx_octree t;
  std::memset(&t, 0, sizeof t);
  vx_svo_read_opts ro;
  std::memset(&ro, 0, sizeof ro);
  ro.max_level = -1;
  if (vx_svo_read(svo_path, &ro, &t, nullptr, &e) != VX_OK) {
    std::fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  const double voxel = t.xf.scale;
  vx_hd_mesh src = {soup.pos, 3 * soup.tri_count, nullptr, soup.tri_count};
  std::printf("source %s: %llu triangles; tree %s: %u^3, %llu surface voxels, voxel %.6g\n\n",
              src_path, (unsigned long long)soup.tri_count, svo_path, 1u << t.depth,
              (unsigned long long)t.voxel_count, voxel);
  std::printf("| mesher | setting | triangles | seconds | source: max (voxels) | p99.9 | mean | "
              "full detail: max | p99.9 | mean |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");

  /* voxlod's full-detail mesh: the surface every coarser cut is measured against too (the
   * bound that --error E names). */
  vx_dc_mesh full;
  std::memset(&full, 0, sizeof full);
  {
    vx_dc_opts o;
    std::memset(&o, 0, sizeof o);
    o.threads = threads;
    if (vx_dc_extract(&t, &o, &full, nullptr, &e) != VX_OK) std::fprintf(stderr, "%s\n", e.msg);
  }
  const vx_hd_mesh fm = {full.pos, full.vertex_count, full.tri, full.triangle_count};
  for (const std::string &c : cuts) {
    vx_dc_opts o;
    std::memset(&o, 0, sizeof o);
    o.threads = threads;
    std::string setting;
    if (c[0] == 'L') {
      o.cut = VX_DC_LEVEL;
      o.level = (uint32_t)std::atoi(c.c_str() + 1);
      setting = "--lod " + c.substr(1);
    } else if (c[0] == 'E') {
      o.cut = VX_DC_ERROR;
      o.max_error = (float)std::atof(c.c_str() + 1);
      setting = "--error " + c.substr(1);
    } else {
      o.cut = VX_DC_FINEST;
      setting = "full detail";
    }
    vx_dc_mesh m;
    vx_dc_stats st;
    double t0 = now();
    if (vx_dc_extract(&t, &o, &m, &st, &e) != VX_OK) {
      std::fprintf(stderr, "%s: %s\n", c.c_str(), e.msg);
      continue;
    }
    result r;
    r.tool = "voxlod";
    r.setting = setting;
    r.tris = m.triangle_count;
    r.verts = m.vertex_count;
    r.sec = now() - t0;
    if (std::getenv("MESH_BENCH_WHERE"))
      std::fprintf(stderr, "  %s: %u passes, %llu nodes split; field %.3f, vertices %.3f, faces "
                   "%.3f, assembly %.3f s\n", setting.c_str(), st.passes,
                   (unsigned long long)st.cells_refined, st.sec_field, st.sec_vertices,
                   st.sec_faces, st.sec_assemble);
    vx_hd_mesh hm = {m.pos, m.vertex_count, m.tri, m.triangle_count};
    if (!measure(src, hm, samples, threads, &r.hd)) std::fprintf(stderr, "out of memory\n");
    if (full.triangle_count && c[0] != 'F') {
      r.has_full = measure(fm, hm, samples, threads, &r.full);
      if (!r.has_full) std::fprintf(stderr, "out of memory\n");
    }
    print_row(r, voxel);
    if (save) {
      std::string p = std::string(save) + "/voxlod_" + c + ".ply";
      vx_mesh_data d = {m.pos, m.nrm, m.vertex_count, m.tri, m.triangle_count};
      if (vx_mesh_write(p.c_str(), &d, nullptr, &e) != VX_OK) std::fprintf(stderr, "%s\n", e.msg);
    }
    vx_dc_mesh_free(&m);
  }

  /* OpenVDB: the same field as a level set. */
  openvdb::initialize();
  std::vector<vx_voxel> field(t.voxel_count);
  uint64_t shared = 0, disputed = 0;
  if (vx_dc_corner_field(&t, threads, field.data(), &shared, &disputed, &e) != VX_OK) {
    std::fprintf(stderr, "%s\n", e.msg);
    return 1;
  }
  std::vector<uint64_t> codes = voxel_codes(&t);
  const float band = (float)(t.band * voxel);
  openvdb::FloatGrid::Ptr grid = openvdb::FloatGrid::create(band);
  openvdb::math::Transform::Ptr xf = openvdb::math::Transform::createLinearTransform(voxel);
  xf->postTranslate(openvdb::Vec3d(t.xf.origin[0], t.xf.origin[1], t.xf.origin[2]));
  grid->setTransform(xf);
  grid->setGridClass(openvdb::GRID_LEVEL_SET);
  {
    openvdb::FloatGrid::Accessor acc = grid->getAccessor();
    const float q = t.band / 127.0f * (float)voxel;
    for (uint64_t i = 0; i < t.voxel_count; i++) {
      uint32_t x, y, z;
      vx_morton_decode(codes[i], &x, &y, &z);
      for (int c = 0; c < 8; c++)
        acc.setValue(
            openvdb::Coord((int)(x + (c & 1)), (int)(y + (c >> 1 & 1)), (int)(z + (c >> 2 & 1))),
            (float)field[i].c[c] * q);
    }
  }
  openvdb::tools::signedFloodFill(grid->tree());
  for (const std::string &a : adapt) {
    double adaptivity = std::atof(a.c_str());
    std::vector<openvdb::Vec3s> pts;
    std::vector<openvdb::Vec3I> tri;
    std::vector<openvdb::Vec4I> quad;
    double t0 = now();
    openvdb::tools::volumeToMesh(*grid, pts, tri, quad, 0.0, adaptivity);
    double sec = now() - t0;
    std::vector<uint32_t> idx;
    idx.reserve(3 * (tri.size() + 2 * quad.size()));
    /* volumeToMesh winds its polygons clockwise seen from outside (normals towards negative
     * values): reversed here, so that saved meshes face the way ours do. */
    for (const auto &v : tri) idx.insert(idx.end(), {v[0], v[2], v[1]});
    for (const auto &v : quad) idx.insert(idx.end(), {v[0], v[2], v[1], v[0], v[3], v[2]});
    result r;
    r.tool = "OpenVDB volumeToMesh";
    r.setting = "adaptivity " + a;
    r.tris = idx.size() / 3;
    r.verts = pts.size();
    r.sec = sec;
    vx_hd_mesh hm = {&pts[0][0], pts.size(), idx.data(), idx.size() / 3};
    if (!measure(src, hm, samples, threads, &r.hd)) std::fprintf(stderr, "out of memory\n");
    print_row(r, voxel);
    if (save) {
      std::string p = std::string(save) + "/openvdb_" + a + ".ply";
      vx_mesh_data d = {&pts[0][0], nullptr, pts.size(), idx.data(), idx.size() / 3};
      if (vx_mesh_write(p.c_str(), &d, nullptr, &e) != VX_OK) std::fprintf(stderr, "%s\n", e.msg);
    }
  }
  vx_dc_mesh_free(&full);
  vx_octree_free(&t);
  vx_soup_free(&soup);
  return 0;
}
