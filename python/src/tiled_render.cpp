/* SPDX-License-Identifier: Apache-2.0 */
// tiled_render.cpp - voxlod._voxlod._TiledRenderer: vx_renderer_create_tiled (voxlod/render.h)
// for voxlod.TiledFile.render. It holds a handle of its own on the file (a streaming renderer's
// loader thread reads it) and the renderer made on it; calls are serialised, the GIL released
// while they run. Arguments are checked in voxlod/_tree.py first; the array types below refuse
// anything else again.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "common.h"
#include "voxlod.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace vxpy;

using Rgb = nb::ndarray<uint8_t, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using Depth = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

struct TiledRenderer {
  vx_tiled_file *f = nullptr;
  vx_renderer *r = nullptr;
  std::mutex mu;
  ~TiledRenderer() {
    vx_renderer_free(r); // before the file its loader reads
    vx_tiled_file_close(f);
  }
};

TiledRenderer *renderer_open(const nb::bytes &path, uint64_t mem_limit, int device,
                             uint32_t budget_mib, int stream) {
  TiledRenderer *t = new TiledRenderer();
  try {
    t->f = open_tiled(path, mem_limit);
  } catch (...) {
    delete t;
    throw;
  }
  vx_renderer_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = device_of(device);
  o.memory_budget_mib = budget_mib;
  o.stream_tiles = stream;
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_renderer_create_tiled(t->f, &o, &t->r, &e);
  }
  if (s != VX_OK) delete t;
  check(s, e);
  return t;
}

// camera: (eye xyz, target xyz, up xyz, fov) or empty for the default orbit. Returns the frame's
// tiles still wanted (stream) and the bytes resident after it.
nb::tuple renderer_render(TiledRenderer &t, Rgb rgb, std::optional<Depth> depth, int lod_mode,
                          int level, float lod_scale, int shade, std::vector<double> camera) {
  if (rgb.shape(2) != 3 || (depth && (depth->shape(0) != rgb.shape(0) ||
      depth->shape(1) != rgb.shape(1))))
    throw nb::value_error("rgb (H, W, 3) and depth (H, W)");
  vx_render_opts o = render_opts(rgb.shape(0), rgb.shape(1), lod_mode, level, lod_scale, shade,
                                   camera);
  vx_frame_stats fs;
  std::memset(&fs, 0, sizeof fs);
  fs.struct_size = sizeof fs;
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    std::lock_guard<std::mutex> g(t.mu);
    s = vx_render(t.r, &o, rgb.data(), depth ? depth->data() : nullptr, &fs, &e);
  }
  check(s, e);
  return nb::make_tuple(fs.tiles_pending, fs.resident_bytes, fs.tiles_loaded);
}

nb::dict renderer_info(TiledRenderer &t) {
  vx_renderer_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  {
    std::lock_guard<std::mutex> g(t.mu);
    vx_renderer_get_info(t.r, &i);
  }
  nb::dict d;
  d["device"] = nb::str(i.device);
  d["gpu"] = (bool)i.used_gpu;
  d["budget_bytes"] = i.budget_bytes;
  d["resident_bytes"] = i.resident_bytes;
  d["tiles"] = i.tiles;
  d["tiles_detailed"] = i.tiles_detailed;
  d["coarse_level"] = i.coarse_level;
  d["notes"] = nb::str(vx_renderer_notes(t.r));
  return d;
}

} // namespace

void bind_tiled_render(nb::module_ &m) {
  nb::class_<TiledRenderer>(m, "_TiledRenderer")
      .def_static("open", &renderer_open, "path"_a, "mem_limit"_a, "device"_a, "budget_mib"_a,
                  "stream"_a, nb::rv_policy::take_ownership)
      .def("render", &renderer_render, "rgb"_a.noconvert(), "depth"_a.noconvert().none(),
           "lod_mode"_a, "level"_a, "lod_scale"_a, "shade"_a, "camera"_a)
      .def("info", &renderer_info);
}
