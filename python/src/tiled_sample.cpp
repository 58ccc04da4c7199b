/* SPDX-License-Identifier: Apache-2.0 */
// tiled_sample.cpp - voxlod._voxlod._TiledSampler: vx_tiled_file_sample (voxlod/sample.h, TILED
// SAMPLING) for voxlod.TiledFile.sample, and vx_tiled_file_colors for TiledFile.colors. It holds a handle of its own on the file (the tiles'
// re-signed voxels, found while sampling, stay with it between calls); calls on one sampler are
// serialised, the GIL released while they run. Arrays are checked in voxlod/_sampling.py first
// (shape, dtype, contiguity); the types below refuse anything else again.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "common.h"
#include "voxlod.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace vxpy;

using Points = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Dist = nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Grad = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Flags = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

vx_tiled_sample_opts tile_opts(uint64_t cache_bytes) {
  vx_tiled_sample_opts to;
  std::memset(&to, 0, sizeof to);
  to.struct_size = sizeof to;
  to.cache_bytes = cache_bytes;
  return to;
}

struct TiledSampler {
  vx_tiled_file *f = nullptr;
  std::mutex mu;
  ~TiledSampler() { vx_tiled_file_close(f); }
};

TiledSampler *sampler_open(const nb::bytes &path, uint64_t mem_limit) {
  vx_tiled_file *f = open_tiled(path, mem_limit);
  TiledSampler *r = new TiledSampler();
  r->f = f;
  return r;
}

void sampler_sample(TiledSampler &t, Points points, Dist dist, std::optional<Grad> grad,
                    std::optional<Flags> flags, int level, int fail_nonfinite, int device,
                    int threads, uint64_t cache_bytes) {
  const uint64_t n = points.shape(0);
  if (points.shape(1) != 3 || dist.shape(0) != n || (grad && (grad->shape(0) != n ||
      grad->shape(1) != 3)) || (flags && flags->shape(0) != n))
    throw nb::value_error("points (N, 3), distances (N,), gradients (N, 3), flags (N,)");
  vx_sample_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
  o.level = level < 0 ? 0 : level;
  o.nonfinite = fail_nonfinite ? VX_NONFINITE_FAIL : VX_NONFINITE_NAN;
  o.threads = threads;
  o.device = device_of(device);
  const vx_tiled_sample_opts to = tile_opts(cache_bytes);
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    std::lock_guard<std::mutex> g(t.mu);
    s = vx_tiled_file_sample(t.f, &o, &to, points.data(), n, dist.data(),
                             grad ? grad->data() : nullptr, flags ? flags->data() : nullptr,
                             nullptr, &e);
  }
  check(s, e);
}

using Rgba = nb::ndarray<uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// RGBA8 at world points from the cells of `level` (-1: the finest): vx_tiled_file_colors.
void sampler_colors(TiledSampler &t, Points points, Rgba out, int level, uint64_t cache_bytes) {
  const uint64_t n = points.shape(0);
  if (points.shape(1) != 3 || out.shape(0) != n || out.shape(1) != 4)
    throw nb::value_error("points (N, 3), colours (N, 4)");
  const vx_tiled_sample_opts to = tile_opts(cache_bytes);
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    std::lock_guard<std::mutex> g(t.mu);
    s = vx_tiled_file_colors(t.f, &to, points.data(), n, level, out.data(), &e);
  }
  check(s, e);
}

// What identifies the file the sampler read: depth, tile depth, tiles, voxels, bytes.
nb::tuple sampler_identity(const TiledSampler &t) {
  vx_tree_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tiled_file_get_info(t.f, &i);
  return nb::make_tuple(i.depth, i.tile_depth, i.tile_count, i.voxel_count, i.file_bytes);
}

} // namespace

void bind_tiled_sample(nb::module_ &m) {
  nb::class_<TiledSampler>(m, "_TiledSampler")
      .def_static("open", &sampler_open, "path"_a, "mem_limit"_a = 0,
                  nb::rv_policy::take_ownership)
      .def("identity", &sampler_identity)
      .def("sample", &sampler_sample, "points"_a.noconvert(), "dist"_a.noconvert(),
           "grad"_a.noconvert().none(), "flags"_a.noconvert().none(), "level"_a,
           "fail_nonfinite"_a, "device"_a, "threads"_a, "cache_bytes"_a)
      .def("colors", &sampler_colors, "points"_a.noconvert(), "out"_a.noconvert(), "level"_a,
           "cache_bytes"_a);
}
