/* SPDX-License-Identifier: Apache-2.0 */
// tile_tasks.cpp - the tiled build as tasks (voxlod/convert.h: vx_tile_plan_*, vx_tile_split,
// vx_tile_merge) for voxlod._tiles, which runs them on a Dask cluster: a plan per worker process
// (of the mesh, or on the parts file one task split it into), tiles built by index into files (a
// record of 360 bytes back to the client), the merge on the client. Long
// calls release the GIL, so the threads of a worker build tiles side by side.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <string>
#include <vector>

#include "common.h"

using namespace nb::literals;

namespace {

using namespace vxpy;

struct TilePlan {
  vx_tile_plan *p = nullptr;
  ~TilePlan() { vx_tile_plan_free(p); }
};

vx_convert_opts opts_of(uint32_t res, float band, int device, uint64_t mem_limit, int threads,
                        int sign_rule, uint32_t tile_depth, int zstd_level, float max_error,
                        int color, int color_filter) {
  if ((color != VX_COLOR_AUTO && color != VX_COLOR_OFF) ||
      (color_filter != VX_COLOR_FILTER_MEAN && color_filter != VX_COLOR_FILTER_DOMINANT))
    throw nb::value_error("unknown colour mode or filter");
  vx_convert_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.band = band;
  o.device = device_of(device);
  o.mem_limit = mem_limit;
  o.threads = threads;
  o.sign_rule = (vx_sign_rule)sign_rule;
  o.color = (vx_color_mode)color;
  o.color_filter = (vx_color_filter)color_filter;
  o.tile_depth = tile_depth;
  o.zstd_level = zstd_level;
  o.max_error = max_error;
  return o;
}

TilePlan *plan_create(const Mesh &mesh, uint32_t res, float band, int device, uint64_t mem_limit,
                      int threads, int sign_rule, uint32_t tile_depth, int zstd_level,
                      float max_error, int color, int color_filter) {
  const vx_convert_opts o = opts_of(res, band, device, mem_limit, threads, sign_rule, tile_depth,
                                    zstd_level, max_error, color, color_filter);
  return made_by(&TilePlan::p, [&](vx_tile_plan **p, vx_error *e) {
    return vx_tile_plan_create(mesh.m, &o, p, e);
  });
}

// A plan on a parts file (vx_tile_plan_open_parts): no mesh in this process.
TilePlan *plan_open_parts(const nb::bytes &parts, uint32_t res, float band, int device,
                          uint64_t mem_limit, int threads, int sign_rule, uint32_t tile_depth,
                          int zstd_level, float max_error, int color, int color_filter) {
  const vx_convert_opts o = opts_of(res, band, device, mem_limit, threads, sign_rule, tile_depth,
                                    zstd_level, max_error, color, color_filter);
  const std::string path = path_of(parts);
  return made_by(&TilePlan::p, [&](vx_tile_plan **p, vx_error *e) {
    return vx_tile_plan_open_parts(path.c_str(), &o, p, e);
  });
}

nb::dict info_dict(const vx_tile_plan_info &i) {
  nb::dict d;
  d["depth"] = i.depth;
  d["tile_depth"] = i.tile_depth;
  d["tiles"] = i.tiles;
  d["build_id"] = i.build_id;
  d["triangles"] = i.triangles;
  d["sec_plan"] = i.sec_plan;
  return d;
}

// The mesh file split by tile into a parts file (vx_tile_split); the plan's summary.
nb::dict tile_split(const nb::bytes &mesh, const nb::bytes &parts, uint32_t res, float band,
                    int device, uint64_t mem_limit, int threads, int sign_rule,
                    uint32_t tile_depth, int zstd_level, float max_error, int color,
                    int color_filter) {
  const vx_convert_opts o = opts_of(res, band, device, mem_limit, threads, sign_rule, tile_depth,
                                    zstd_level, max_error, color, color_filter);
  const std::string m = path_of(mesh), p = path_of(parts);
  vx_tile_plan_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tile_split(m.c_str(), &o, p.c_str(), &i, &e);
  }
  check(s, e);
  return info_dict(i);
}

nb::dict plan_info(const TilePlan &t) {
  vx_tile_plan_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tile_plan_get_info(t.p, &i);
  return info_dict(i);
}

nb::bytes plan_build(TilePlan &t, uint64_t k, const nb::bytes &path) {
  const std::string p = path_of(path);
  vx_tile_record rec;
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tile_plan_build(t.p, k, p.c_str(), &rec, &e);
  }
  check(s, e);
  return nb::bytes((const char *)rec.bytes, sizeof rec.bytes);
}

vx_tile_record record_of(const nb::bytes &b) {
  if (b.size() != VX_TILE_RECORD_BYTES)
    throw nb::value_error(("a tile record is " + std::to_string(VX_TILE_RECORD_BYTES) +
                           " bytes, not " + std::to_string(b.size())).c_str());
  vx_tile_record r;
  std::memcpy(r.bytes, b.c_str(), sizeof r.bytes);
  return r;
}

nb::dict record_info(const nb::bytes &b) {
  const vx_tile_record r = record_of(b);
  vx_tile_record_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_error e = no_error();
  check(vx_tile_record_get_info(&r, &i, &e), e);
  nb::dict d;
  d["empty"] = i.empty != 0;
  d["code"] = i.code;
  d["build_id"] = i.build_id;
  d["voxels"] = i.voxels;
  d["file_bytes"] = i.file_bytes;
  d["gpu"] = i.gpu != 0;
  d["sec_build"] = i.sec_build;
  d["sec_encode"] = i.sec_encode;
  return d;
}

// Records and their files (b"" for an empty tile's) into the tiled file at out.
nb::dict merge(const nb::bytes &out, const std::vector<nb::bytes> &recs,
               const std::vector<nb::bytes> &paths) {
  if (recs.size() != paths.size()) throw nb::value_error("one path per record");
  const std::string o = path_of(out);
  std::vector<vx_tile_record> r;
  std::vector<std::string> p;
  r.reserve(recs.size());
  p.reserve(paths.size());
  for (size_t i = 0; i < recs.size(); i++) {
    r.push_back(record_of(recs[i]));
    p.push_back(path_of(paths[i]));
  }
  std::vector<const char *> pc;
  for (const std::string &x : p) pc.push_back(x.c_str());
  vx_error e = no_error();
  vx_conversion *c = nullptr;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tile_merge(o.c_str(), r.data(), pc.data(), r.size(), &c, &e);
  }
  check(s, e);
  vx_conversion_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  vx_conversion_get_stats(c, &st);
  nb::dict d;
  d["notes"] = text_of(vx_conversion_notes(c));
  d["surface_voxels"] = st.surface_voxels;
  d["nodes"] = st.nodes;
  d["file_bytes"] = st.file_bytes;
  d["used_gpu"] = st.used_gpu != 0;
  d["sec_merge"] = st.sec_total;
  vx_conversion_free(c);
  return d;
}

} // namespace

void bind_tile_tasks(nb::module_ &m) {
  nb::class_<TilePlan>(m, "_TilePlan")
      .def_static("create", &plan_create, "mesh"_a, "resolution"_a, "band"_a, "device"_a,
                  "mem_limit"_a, "threads"_a, "sign_rule"_a, "tile_depth"_a, "zstd_level"_a = 0, "max_error"_a = 0.0f,
                  "color"_a = 0, "color_filter"_a = 0, nb::rv_policy::take_ownership,
                  nb::keep_alive<0, 1>())
      .def_static("open_parts", &plan_open_parts, "parts"_a, "resolution"_a, "band"_a,
                  "device"_a, "mem_limit"_a, "threads"_a, "sign_rule"_a, "tile_depth"_a,
                  "zstd_level"_a = 0, "max_error"_a = 0.0f, "color"_a = 0, "color_filter"_a = 0,
                  nb::rv_policy::take_ownership)
      .def("info", &plan_info)
      .def("build", &plan_build, "k"_a, "path"_a)
      .def("notes", [](TilePlan &t) { return text_of(vx_tile_plan_notes(t.p)); });
  m.def("tile_split", &tile_split, "mesh"_a, "parts"_a, "resolution"_a, "band"_a, "device"_a,
        "mem_limit"_a, "threads"_a, "sign_rule"_a, "tile_depth"_a, "zstd_level"_a = 0,
        "max_error"_a = 0.0f, "color"_a = 0, "color_filter"_a = 0);
  m.def("tile_record_info", &record_info, "record"_a);
  m.def("tile_merge", &merge, "out"_a, "records"_a, "paths"_a);
}
