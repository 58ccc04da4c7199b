/* SPDX-License-Identifier: Apache-2.0 */
/* nvdb_write.cpp - a cut's grid points as a NanoVDB float level set (.nvdb), through NanoVDB's own
 * headers (OpenVDB 10.0's NanoVDB; the only file that includes them for writing).
 *
 * nanovdb::GridBuilder<float> takes the points (background +band * h, class level set), its
 * sdfToLevelSet() flood-fills the inactive values' signs bottom-up (inside regions read
 * -background), getHandle() lays the tree out as one pointer-free buffer with the world map
 * (voxel size h, index origin at the tree's origin) and the grid name, and nanovdb::io::writeGrid
 * gives the file bytes (NanoVDB's segment header, grid metadata, the buffer; uncompressed), which
 * go to the atomic writer. The file is what nanovdb::io::readGrid reads back. A coloured tree adds
 * a second grid, a nanovdb::Vec3f grid "Cd" (linear rgb, background 0) on the same points, after
 * the level set in the same file (nanovdb::io::readGrid(file, "Cd")).
 */
#include <nanovdb/util/GridBuilder.h>
#include <nanovdb/util/IO.h>

#include <sstream>
#include <string>
#include <vector>

#include "sys/atomic_file.h"
#include "formats/grid_export.h"

extern "C" int vx_nvdb_write_available(void) { return 1; }

extern "C" vx_status vx_nvdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes,
                                   vx_error *err) {
  *bytes = 0;
  std::string data;
  try {
    const float h = (float)g->h;
    nanovdb::GridBuilder<float> builder(g->band * h, nanovdb::GridClass::LevelSet);
    auto acc = builder.getAccessor();
    for (uint64_t i = 0; i < g->count; i++) {
      uint32_t x, y, z;
      vx_morton_decode(g->keys[i], &x, &y, &z);
      const int p = (int)g->pad;
      acc.setValue(nanovdb::Coord((int)x - p, (int)y - p, (int)z - p), g->values[i] * h);
    }
    builder.sdfToLevelSet();
    auto handle = builder.getHandle(g->h, nanovdb::Vec3d(g->origin[0], g->origin[1], g->origin[2]),
                                    std::string(g->name));
    if (!handle.grid<float>())
      return vx_error_set(err, VX_ERR_FORMAT, "NanoVDB: the builder gave no float grid");
    std::vector<nanovdb::GridHandle<>> handles;
    handles.push_back(std::move(handle));
    if (g->rgb) {
      nanovdb::GridBuilder<nanovdb::Vec3f> cb(nanovdb::Vec3f(0.0f), nanovdb::GridClass::Unknown);
      auto ca = cb.getAccessor();
      for (uint64_t i = 0; i < g->count; i++) {
        uint32_t x, y, z;
        vx_morton_decode(g->keys[i], &x, &y, &z);
        const int p = (int)g->pad;
        const float *c = g->rgb + 3 * i;
        ca.setValue(nanovdb::Coord((int)x - p, (int)y - p, (int)z - p),
                    nanovdb::Vec3f(c[0], c[1], c[2]));
      }
      handles.push_back(cb.getHandle(g->h, nanovdb::Vec3d(g->origin[0], g->origin[1],
                                                          g->origin[2]), std::string("Cd")));
      if (!handles.back().grid<nanovdb::Vec3f>())
        return vx_error_set(err, VX_ERR_FORMAT, "NanoVDB: the builder gave no Vec3f grid");
    }
    /* writeGrid(s) skips the segment header first and writes it last: the stream must already
     * hold that many bytes to seek over (a string stream cannot seek past its end) */
    nanovdb::io::Segment seg(nanovdb::io::Codec::NONE);
    for (auto &h : handles) seg.add(h);
    std::stringstream os(std::ios_base::in | std::ios_base::out | std::ios_base::binary);
    os << std::string(seg.memUsage(), '\0');
    os.seekp(0);
    if (handles.size() == 1) nanovdb::io::writeGrid(os, handles[0], nanovdb::io::Codec::NONE);
    else nanovdb::io::writeGrids(os, handles, nanovdb::io::Codec::NONE);
    if (!os) return vx_error_set(err, VX_ERR_IO, "NanoVDB: serializing the grid failed");
    data = os.str();
  } catch (const std::bad_alloc &) {
    return vx_error_set(err, VX_ERR_NOMEM, "NanoVDB: out of memory building the grid");
  } catch (const std::exception &e) {
    return vx_error_set(err, VX_ERR_FORMAT, "NanoVDB: %s", e.what());
  }
  vx_status s = vx_atomic_write_file(path, data.data(), data.size(), err);
  if (s == VX_OK) *bytes = data.size();
  return s;
}
