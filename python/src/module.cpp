/* SPDX-License-Identifier: Apache-2.0 */
// module.cpp - voxlod._voxlod: the nanobind module over libvoxlod's public C API (voxlod.h).
//
// This layer only converts: Python arguments into option structs, statuses into exceptions
// (voxlod._errors makes them), arrays into pointers. Checks a user should read as Python
// messages (shapes, dtypes, contiguity, value ranges) happen in the package's Python modules
// before the call; the library validates everything again. Long calls release the GIL. A conversion runs
// on a worker thread while the calling thread waits with the GIL released, waking every 50 ms
// to report progress and to run Python's signal handlers, so Ctrl-C cancels the build
// (the progress callback then answers "stop", the library cleans up, KeyboardInterrupt is
// raised).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "common.h"
#include "voxlod.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace vxpy;

// ---- meshes ---------------------------------------------------------------------------------

using Floats2 = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Uints2 = nb::ndarray<const uint32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

Mesh *mesh_load(const nb::bytes &path_bytes, double timeout_s, uint64_t mem_limit) {
  std::string path = path_of(path_bytes);
  vx_mesh_load_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.timeout_s = timeout_s;
  o.mem_limit = mem_limit;
  return made_by(&Mesh::m, [&](vx_mesh **m, vx_error *e) {
    return vx_mesh_load(path.c_str(), &o, m, e);
  });
}

Mesh *mesh_from_arrays(Floats2 v, Uints2 f) {
  return made_by(&Mesh::m, [&](vx_mesh **m, vx_error *e) {
    return vx_mesh_from_arrays(v.data(), v.shape(0), f.data(), f.shape(0), m, e);
  });
}

// Read-only views of a mesh's arrays; `self` (the Python _Mesh) stays alive while they do.
// Vertices: (V, 3) float32, world coordinates (a loaded mesh or one made from arrays is a
// triangle soup: 3 vertices per triangle). Indices: (T, 3) uint32, or None for a soup.
nb::ndarray<nb::numpy, const float, nb::ndim<2>> mesh_vertices(nb::handle self) {
  Mesh &m = nb::cast<Mesh &>(self);
  uint64_t n = 0;
  const float *p = vx_mesh_vertices(m.m, &n);
  static const float empty[3] = {0};
  size_t shape[2] = {p ? (size_t)n : 0, 3};
  return nb::ndarray<nb::numpy, const float, nb::ndim<2>>(p ? p : empty, 2, shape, self);
}

std::optional<nb::ndarray<nb::numpy, const uint32_t, nb::ndim<2>>> mesh_indices(nb::handle self) {
  Mesh &m = nb::cast<Mesh &>(self);
  uint64_t n = 0;
  const uint32_t *p = vx_mesh_indices(m.m, &n);
  if (!p) return std::nullopt;
  size_t shape[2] = {(size_t)n, 3};
  return nb::ndarray<nb::numpy, const uint32_t, nb::ndim<2>>(p, 2, shape, self);
}

using Bytes2 = nb::ndarray<const uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// Per-vertex colours (N, 3 or 4) uint8, N the vertex count the mesh was made with.
void mesh_set_vertex_colors(Mesh &m, Bytes2 c) {
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_mesh_set_vertex_colors(m.m, c.data(), c.shape(0), (uint32_t)c.shape(1), &e);
  }
  check(s, e);
}

nb::dict mesh_info(const Mesh &m) {
  vx_mesh_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_mesh_get_info(m.m, &i);
  nb::dict d;
  d["triangles"] = i.triangles;
  d["meshes"] = i.meshes;
  d["bbox_min"] = nb::make_tuple(i.bbox_min[0], i.bbox_min[1], i.bbox_min[2]);
  d["bbox_max"] = nb::make_tuple(i.bbox_max[0], i.bbox_max[1], i.bbox_max[2]);
  d["skipped_degenerate"] = i.skipped_degenerate;
  d["skipped_nonfinite"] = i.skipped_nonfinite;
  d["skipped_nontriangle"] = i.skipped_nontriangle;
  d["load_seconds"] = i.load_seconds;
  d["has_color"] = i.has_color != 0;
  d["materials"] = i.materials;
  d["textures"] = i.textures;
  return d;
}

// ---- trees ----------------------------------------------------------------------------------

// A tree with the renderer and sampler made for it on first use. The mutex serialises their
// use (one thread at a time each, voxlod.h); the tree itself is read-only. It is only taken
// through lock_tree().
struct Tree {
  vx_tree *t = nullptr;
  vx_renderer *renderer = nullptr;
  int renderer_device = -1;
  vx_sampler *sampler = nullptr;
  int sampler_device = -1;
  std::string notes;
  std::mutex lock;
  ~Tree() {
    vx_sampler_free(sampler);
    vx_renderer_free(renderer);
    vx_tree_free(t);
  }
  vx_tree_info info() const {
    vx_tree_info i;
    std::memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    vx_tree_get_info(t, &i);
    return i;
  }
};

// Takes t.lock with the GIL released. A thread that waited for the lock while holding the GIL
// would deadlock with the lock's holder, which needs the GIL back when its call returns.
std::unique_lock<std::mutex> lock_tree(Tree &t) {
  std::unique_lock<std::mutex> g(t.lock, std::defer_lock);
  nb::gil_scoped_release rel;
  g.lock();
  return g;
}

using Bytes1 = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

vx_read_opts read_opts(uint32_t levels, uint64_t mem_limit) {
  vx_read_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.levels = levels;
  o.mem_limit = mem_limit;
  return o;
}

// A tree read from a file (path) or from the bytes of one (data), levels 0 .. levels-1 (0: all).
Tree *tree_read(const char *path, const Bytes1 *data, uint32_t levels, uint64_t mem_limit) {
  vx_read_opts o = read_opts(levels, mem_limit);
  vx_error e = no_error();
  vx_tree *t = nullptr;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = path ? vx_tree_load(path, &o, &t, &e)
             : vx_tree_load_memory(data->data(), data->shape(0), &o, &t, &e);
  }
  check(s, e);
  Tree *r = new Tree();
  r->t = t;
  return r;
}

Tree *tree_load(const nb::bytes &path, uint32_t levels, uint64_t mem_limit) {
  return tree_read(path_of(path).c_str(), nullptr, levels, mem_limit);
}

// From any bytes-like object, viewed as uint8 by the caller.
Tree *tree_load_bytes(Bytes1 data, uint32_t levels, uint64_t mem_limit) {
  return tree_read(nullptr, &data, levels, mem_limit);
}

vx_save_opts save_opts(int zstd_level) {
  vx_save_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.zstd_level = zstd_level;
  return o;
}

// The .svo file's bytes, as a Python bytes object (one copy of the library's buffer).
nb::bytes tree_encode(const Tree &t, int zstd_level) {
  vx_save_opts o = save_opts(zstd_level);
  vx_error e = no_error();
  void *data = nullptr;
  size_t size = 0;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tree_encode(t.t, &o, &data, &size, &e);
  }
  check(s, e);
  nb::bytes out((const char *)data, size);
  vx_buffer_free(data);
  return out;
}

void tree_save(Tree &t, const nb::bytes &path_bytes, int zstd_level) {
  std::string path = path_of(path_bytes);
  vx_save_opts o = save_opts(zstd_level);
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tree_save(t.t, path.c_str(), &o, &e);
  }
  check(s, e);
}

// A vx_tree_info as a dict (a tree's, or a tiled file's whole tree: then with its tiles).
nb::dict info_dict(const vx_tree_info &i) {
  nb::dict d;
  d["depth"] = i.depth;
  d["resolution"] = i.resolution;
  d["levels_loaded"] = i.levels_loaded;
  d["node_count"] = i.node_count;
  d["voxel_count"] = i.voxel_count;
  d["origin"] = nb::make_tuple(i.origin[0], i.origin[1], i.origin[2]);
  d["scale"] = i.scale;
  d["band"] = i.band;
  d["prune_error"] = i.prune_error;
  d["memory_bytes"] = i.memory_bytes;
  d["file_bytes"] = i.file_bytes;
  d["file_version"] = i.file_version;
  d["has_color"] = i.has_color != 0;
  d["color_bytes"] = i.color_bytes;
  d["tile_depth"] = i.tile_depth;
  d["tile_count"] = i.tile_count;
  return d;
}

nb::dict tree_info(const Tree &t) { return info_dict(t.info()); }

// One row of the memory table, in vx_level_stats' field order.
std::vector<uint64_t> level_row(const vx_level_stats &s) {
  return {s.level,       s.cells,        s.leaves,       s.topology_bytes,
          s.lod_bytes,   s.field_bytes,  s.disk_bytes,   s.render_bytes,
          s.float8_bytes, s.dense_bytes, s.color_bytes};
}

// The memory table: one tuple per level, in vx_level_stats' field order.
std::vector<std::vector<uint64_t>> tree_levels(const Tree &t) {
  vx_tree_info i = t.info();
  std::vector<std::vector<uint64_t>> rows;
  for (uint32_t l = 0; l <= i.depth; l++) {
    vx_level_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (vx_tree_get_level(t.t, l, &s) != VX_OK) continue;
    rows.push_back(level_row(s));
  }
  return rows;
}

// Read-only views of the raw arrays; `self` (the Python Tree) stays alive while they do.
nb::ndarray<nb::numpy, const uint8_t, nb::ndim<2>> tree_nodes(nb::handle self) {
  Tree &t = nb::cast<Tree &>(self);
  uint64_t n = 0;
  const void *p = vx_tree_nodes(t.t, &n);
  static const uint8_t empty[16] = {0};
  size_t shape[2] = {(size_t)n, 16};
  return nb::ndarray<nb::numpy, const uint8_t, nb::ndim<2>>(p ? p : empty, 2, shape, self);
}

nb::ndarray<nb::numpy, const int8_t, nb::ndim<2>> tree_voxels(nb::handle self) {
  Tree &t = nb::cast<Tree &>(self);
  uint64_t n = 0;
  const void *p = vx_tree_voxels(t.t, &n);
  static const int8_t empty[8] = {0};
  size_t shape[2] = {(size_t)n, 8};
  return nb::ndarray<nb::numpy, const int8_t, nb::ndim<2>>(p ? p : empty, 2, shape, self);
}

// The packed RGBA8 colours (r in the low byte) of the nodes or the voxels, read-only, in the
// order of nodes() / voxels(); empty for a grey tree or a level not loaded.
nb::ndarray<nb::numpy, const uint32_t, nb::ndim<1>> tree_colors_of(nb::handle self, bool voxels) {
  Tree &t = nb::cast<Tree &>(self);
  uint64_t n = 0;
  const uint32_t *p = voxels ? vx_tree_voxel_colors(t.t, &n) : vx_tree_node_colors(t.t, &n);
  static const uint32_t empty[1] = {0};
  size_t shape[1] = {p ? (size_t)n : 0};
  return nb::ndarray<nb::numpy, const uint32_t, nb::ndim<1>>(p ? p : empty, 1, shape, self);
}

using Rgba = nb::ndarray<uint8_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// RGBA8 (sRGB) at world points, from the cells of `level` (-1: the finest loaded).
void tree_colors(Tree &t, Floats2 points, Rgba out, int level) {
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tree_colors(t.t, points.data(), points.shape(0), level, out.data(), &e);
  }
  check(s, e);
}

Tree *tree_prune(Tree &t, float max_error) {
  return made_by(&Tree::t, [&](vx_tree **p, vx_error *e) {
    return vx_tree_prune(t.t, max_error, p, e);
  });
}

// ---- convert, with progress and Ctrl-C --------------------------------------------------------

// What the worker thread shares with the waiting one.
struct Progress {
  std::mutex m;
  std::condition_variable cv;
  std::string phase;
  double fraction = 0.0;
  bool changed = false, done = false;
  std::atomic<int> cancel{0};
};

int progress_cb(void *user, const char *phase, double fraction) {
  Progress *p = (Progress *)user;
  {
    std::lock_guard<std::mutex> g(p->m);
    p->phase = phase ? phase : "";
    p->fraction = fraction;
    p->changed = true;
  }
  return p->cancel.load();
}

// The mesh's notes, then the conversion's lines that are not among them (a conversion may
// repeat what the load said), one per line.
std::string merged_notes(const char *mesh_notes, const char *conv_notes) {
  std::vector<std::string> lines;
  for (const char *text : {mesh_notes, conv_notes}) {
    std::string rest = text ? text : "";
    size_t at = 0;
    while (at < rest.size()) {
      size_t end = rest.find('\n', at);
      if (end == std::string::npos) end = rest.size();
      std::string line = rest.substr(at, end - at);
      at = end + 1;
      bool seen = false;
      for (const std::string &l : lines) seen = seen || l == line;
      if (!line.empty() && !seen) lines.push_back(line);
    }
  }
  std::string out;
  for (const std::string &l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

// The conversion, in memory (path None: the tree comes back) or to a .svo file (path bytes: a
// tiled one with tile_depth, on `gpus` GPUs; None comes back, the file holds the tree). mesh: a
// _Mesh, or to a file the mesh file's path (bytes): vx_convert_file reads it, split by tile
// without holding it where it can be.
Tree *convert(nb::object mesh_obj, uint32_t res, float max_error, float band, int device,
              uint64_t mem_limit, int threads, int sign_rule, nb::object progress, int color,
              int color_filter, nb::object path_obj, uint32_t tile_depth, int gpus) {
  const bool to_file = !path_obj.is_none();
  const std::string path = to_file ? path_of(nb::cast<nb::bytes>(path_obj)) : std::string();
  const bool from_file = nb::isinstance<nb::bytes>(mesh_obj);
  if (from_file && !to_file) throw nb::value_error("a mesh file is converted to a file");
  const std::string mesh_path = from_file ? path_of(nb::cast<nb::bytes>(mesh_obj)) : std::string();
  const Mesh *mesh = from_file ? nullptr : nb::cast<const Mesh *>(mesh_obj);
  vx_convert_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.resolution = res;
  o.max_error = max_error;
  o.band = band;
  o.device = device_of(device);
  o.mem_limit = mem_limit;
  o.threads = threads;
  o.sign_rule = (vx_sign_rule)sign_rule;
  o.color = color == 1 ? VX_COLOR_OFF : VX_COLOR_AUTO;
  o.color_filter = color_filter == 1 ? VX_COLOR_FILTER_DOMINANT : VX_COLOR_FILTER_MEAN;
  o.tile_depth = tile_depth;
  o.gpus = gpus;
  Progress pr;
  o.progress = progress_cb;
  o.user = &pr;
  vx_error e = no_error();
  vx_conversion *b = nullptr;
  vx_status s = VX_OK;
  bool interrupted = false;
  std::thread worker([&] {
    vx_status r = from_file ? vx_convert_file(mesh_path.c_str(), nullptr, &o, path.c_str(),
                                              nullptr, &b, &e)
                  : to_file ? vx_convert_to_file(mesh->m, &o, path.c_str(), &b, &e)
                            : vx_convert(mesh->m, &o, &b, &e);
    std::lock_guard<std::mutex> g(pr.m);
    s = r;
    pr.done = true;
    pr.cv.notify_all();
  });
  for (;;) {
    std::string phase;
    double fraction = 0.0;
    bool changed = false, done = false;
    {
      nb::gil_scoped_release rel;
      std::unique_lock<std::mutex> g(pr.m);
      pr.cv.wait_for(g, std::chrono::milliseconds(50), [&] { return pr.done; });
      done = pr.done;
      changed = pr.changed;
      phase = pr.phase;
      fraction = pr.fraction;
      pr.changed = false;
    }
    if (!done && !interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true; // KeyboardInterrupt is pending: stop the build, raise it after
      pr.cancel = 1;
      continue;
    }
    // the last report is delivered too, so that a short build still shows its phases' end
    if (changed && !progress.is_none() && !interrupted) {
      try {
        progress(phase, fraction);
      } catch (...) {
        pr.cancel = 1; // the callback raised: stop, then let its exception through
        {
          nb::gil_scoped_release rel;
          worker.join();
        }
        vx_conversion_free(b);
        throw;
      }
    }
    if (done) break;
  }
  {
    nb::gil_scoped_release rel;
    worker.join();
  }
  if (interrupted) {
    vx_conversion_free(b);
    throw nb::python_error();
  }
  check(s, e);
  if (to_file) {
    vx_conversion_free(b);
    return nullptr;
  }
  Tree *r = new Tree();
  r->notes = merged_notes(vx_mesh_notes(mesh->m), vx_conversion_notes(b));
  r->t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  return r;
}

// ---- tiled files, tile by tile ----------------------------------------------------------------

struct TiledFile {
  vx_tiled_file *f = nullptr;
  ~TiledFile() { vx_tiled_file_close(f); }
};

TiledFile *tiled_open(const nb::bytes &path, uint64_t mem_limit) {
  vx_tiled_file *f = open_tiled(path, mem_limit);
  TiledFile *r = new TiledFile();
  r->f = f;
  return r;
}

nb::dict tiled_info(const TiledFile &t) {
  vx_tree_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tiled_file_get_info(t.f, &i);
  return info_dict(i);
}

// The memory table of the whole tree (the rows Tree.levels gives, from the tiles' headers).
std::vector<std::vector<uint64_t>> tiled_levels(TiledFile &t) {
  vx_tree_info i;
  std::memset(&i, 0, sizeof i);
  i.struct_size = sizeof i;
  vx_tiled_file_get_info(t.f, &i);
  std::vector<std::vector<uint64_t>> rows;
  for (uint32_t l = 0; l <= i.depth; l++) {
    vx_level_stats s;
    std::memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    vx_error e = no_error();
    vx_status st;
    {
      nb::gil_scoped_release rel;
      st = vx_tiled_file_get_level(t.f, l, &s, &e);
    }
    check(st, e);
    rows.push_back(level_row(s));
  }
  return rows;
}

nb::dict tiled_tile(const TiledFile &t, uint64_t i) {
  vx_tile_info ti;
  std::memset(&ti, 0, sizeof ti);
  ti.struct_size = sizeof ti;
  if (vx_tiled_file_get_tile(t.f, i, &ti) != VX_OK) throw nb::index_error("no such tile");
  nb::dict d;
  d["code"] = ti.code;
  d["cell"] = nb::make_tuple(ti.cell[0], ti.cell[1], ti.cell[2]);
  d["voxel_count"] = ti.voxel_count;
  d["node_count"] = ti.node_count;
  d["file_bytes"] = ti.file_bytes;
  d["origin"] = nb::make_tuple(ti.origin[0], ti.origin[1], ti.origin[2]);
  d["edge"] = ti.edge;
  return d;
}

Tree *tiled_load_tile(TiledFile &t, uint64_t i, uint32_t levels, uint64_t mem_limit) {
  vx_read_opts o = read_opts(levels, mem_limit);
  return made_by(&Tree::t, [&](vx_tree **tr, vx_error *e) {
    return vx_tiled_file_load_tile(t.f, i, &o, tr, e);
  });
}

Tree *tiled_level_tree(TiledFile &t, uint32_t level, uint64_t mem_limit) {
  vx_read_opts o = read_opts(0, mem_limit);
  return made_by(&Tree::t, [&](vx_tree **tr, vx_error *e) {
    return vx_tiled_file_level_tree(t.f, level, &o, tr, e);
  });
}

// ---- meshes out (voxlod/mesher.h) --------------------------------------------------------------

vx_mesher_opts mesher_opts(int cut, uint32_t level, float max_error, int threads) {
  vx_mesher_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.cut = (vx_mesher_cut)cut;
  o.level = level;
  o.max_error = max_error;
  o.threads = threads;
  return o;
}

Mesh *tree_mesh(Tree &t, int cut, uint32_t level, float max_error, int threads) {
  const vx_mesher_opts o = mesher_opts(cut, level, max_error, threads); /* reads t only */
  return made_by(&Mesh::m, [&](vx_mesh **m, vx_error *e) { return vx_mesher_extract(t.t, &o, m, e); });
}

Mesh *tiled_mesh(TiledFile &t, int threads) {
  const vx_mesher_opts o = mesher_opts(VX_MESHER_FINEST, 0, 0.0f, threads);
  return made_by(&Mesh::m, [&](vx_mesh **m, vx_error *e) { return vx_tiled_file_mesh(t.f, &o, m, e); });
}

void mesh_save(const Mesh &m, const nb::bytes &path_bytes, const std::string &format) {
  const std::string path = path_of(path_bytes);
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_mesh_save_as(m.m, path.c_str(), format.empty() ? nullptr : format.c_str(), &e);
  }
  check(s, e);
}

// The indexed form's normals (V, 3) and colours (V, 4), None for a loaded mesh (a soup).
std::optional<nb::ndarray<nb::numpy, const float, nb::ndim<2>>> mesh_normals(nb::handle self) {
  Mesh &m = nb::cast<Mesh &>(self);
  uint64_t n = 0;
  const float *p = vx_mesh_normals(m.m, &n);
  if (!p) return std::nullopt;
  size_t shape[2] = {(size_t)n, 3};
  return nb::ndarray<nb::numpy, const float, nb::ndim<2>>(p, 2, shape, self);
}

std::optional<nb::ndarray<nb::numpy, const uint8_t, nb::ndim<2>>> mesh_colors(nb::handle self) {
  Mesh &m = nb::cast<Mesh &>(self);
  uint64_t n = 0;
  const uint8_t *p = vx_mesh_colors(m.m, &n);
  if (!p) return std::nullopt;
  size_t shape[2] = {(size_t)n, 4};
  return nb::ndarray<nb::numpy, const uint8_t, nb::ndim<2>>(p, 2, shape, self);
}

// ---- render ----------------------------------------------------------------------------------

using Rgb = nb::ndarray<uint8_t, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using Depth = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void ensure_renderer(Tree &t, int device) {
  if (t.renderer && t.renderer_device == device) return;
  vx_renderer_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = device_of(device);
  vx_error e = no_error();
  vx_renderer *r = nullptr;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_renderer_create(t.t, &o, &r, &e);
  }
  check(s, e);
  // a sampler that borrowed the old renderer's GPU tree goes first
  vx_sampler_free(t.sampler);
  t.sampler = nullptr;
  t.sampler_device = -1;
  vx_renderer_free(t.renderer);
  t.renderer = r;
  t.renderer_device = device;
}

// camera: (eye xyz, target xyz, up xyz, fov) or empty for the default orbit
void render(Tree &t, Rgb rgb, std::optional<Depth> depth, int lod_mode, int level,
            float lod_scale, int shade, std::vector<double> camera, int device) {
  std::unique_lock<std::mutex> g = lock_tree(t);
  ensure_renderer(t, device);
  vx_render_opts o = render_opts(rgb.shape(0), rgb.shape(1), lod_mode, level, lod_scale, shade,
                                   camera);
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_render(t.renderer, &o, rgb.data(), depth ? depth->data() : nullptr, nullptr, &e);
  }
  check(s, e);
}

std::vector<double> orbit_camera(const Tree &t, double az, double el, double fov) {
  vx_camera c;
  std::memset(&c, 0, sizeof c);
  vx_camera_orbit(t.t, az, el, fov, &c);
  return {c.eye[0], c.eye[1], c.eye[2], c.target[0], c.target[1], c.target[2],
          c.up[0],  c.up[1],  c.up[2],  c.fov_y_deg};
}

// ---- sample ----------------------------------------------------------------------------------

void ensure_sampler(Tree &t, int device) {
  if (t.sampler && t.sampler_device == device) return;
  vx_sampler_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.device = device_of(device);
  o.renderer = t.renderer; // its GPU tree, when it has one: no second upload
  vx_error e = no_error();
  vx_sampler *s = nullptr;
  vx_status st;
  {
    nb::gil_scoped_release rel;
    st = vx_sampler_create(t.t, &o, &s, &e);
  }
  check(st, e);
  vx_sampler_free(t.sampler);
  t.sampler = s;
  t.sampler_device = device;
}

vx_sample_opts sample_opts(int level, int fail_nonfinite, int band_cache = 0) {
  vx_sample_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.lod = level < 0 ? VX_LOD_FINEST : VX_LOD_LEVEL;
  o.level = level;
  o.nonfinite = fail_nonfinite ? VX_NONFINITE_FAIL : VX_NONFINITE_NAN;
  o.band_cache = band_cache;
  return o;
}

using Dist = nb::ndarray<float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Grad = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Flags = nb::ndarray<uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// Host arrays (numpy): on `threads` cores (0: all; device 1) or through the GPU sampler
// (device 2).
void sample_host(Tree &t, Floats2 points, Dist dist, std::optional<Grad> grad,
                 std::optional<Flags> flags, int level, int fail_nonfinite, int device,
                 int band_cache, int threads) {
  vx_sample_opts o = sample_opts(level, fail_nonfinite, band_cache);
  o.threads = threads;
  vx_error e = no_error();
  vx_status s;
  uint64_t n = points.shape(0);
  if (device == 2) {
    std::unique_lock<std::mutex> g = lock_tree(t);
    ensure_sampler(t, 2);
    nb::gil_scoped_release rel;
    s = vx_sampler_sample(t.sampler, &o, points.data(), n, dist.data(),
                          grad ? grad->data() : nullptr, flags ? flags->data() : nullptr, nullptr,
                          &e);
  } else {
    nb::gil_scoped_release rel;
    s = vx_tree_sample(t.t, &o, points.data(), n, dist.data(), grad ? grad->data() : nullptr,
                       flags ? flags->data() : nullptr, nullptr, &e);
  }
  check(s, e);
}

// Device arrays (torch, cupy): raw CUDA pointers, sampled in place by the GPU sampler.
void sample_device(Tree &t, uintptr_t points, uint64_t n, uintptr_t dist, uintptr_t grad,
                   uintptr_t flags, int level, int fail_nonfinite, uintptr_t stream,
                   int band_cache) {
  std::unique_lock<std::mutex> g = lock_tree(t);
  ensure_sampler(t, 2);
  vx_sample_opts o = sample_opts(level, fail_nonfinite, band_cache);
  o.cuda_stream = (void *)stream;
  vx_error e = no_error();
  vx_sample_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_sampler_sample(t.sampler, &o, (const float *)points, n, (float *)dist, (float *)grad,
                          (uint8_t *)flags, &st, &e);
  }
  check(s, e);
  if (n && !st.device_pointers) {
    vx_error m = no_error();
    std::snprintf(m.msg, sizeof m.msg, "the arrays are not CUDA device memory");
    raise_status(VX_ERR_INVALID_ARG, m);
  }
}

void surface_points(Tree &t, Grad out, float spread, uint64_t seed, bool shuffle) {
  vx_surface_points_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.spread = spread;
  o.seed = seed;
  o.shuffle = shuffle ? 1 : 0;
  vx_error e = no_error();
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tree_surface_points(t.t, &o, out.shape(0), out.data(), &e);
  }
  check(s, e);
}

// Pointer, device and layout of a DLPack array (for CUDA arrays without
// __cuda_array_interface__): (data, device type, device id, shape, strides in elements,
// dtype code, dtype bits).
nb::tuple dlpack_info(nb::ndarray<nb::ro> a) {
  nb::list shape, strides;
  for (size_t i = 0; i < a.ndim(); i++) {
    shape.append(a.shape(i));
    strides.append(a.stride(i));
  }
  return nb::make_tuple((uintptr_t)a.data(), a.device_type(), a.device_id(), nb::tuple(shape),
                        nb::tuple(strides), (int)a.dtype().code, (int)a.dtype().bits);
}

} // namespace

NB_MODULE(_voxlod, m) {
  m.doc() = "libvoxlod bindings (internal: use the voxlod package)";
  m.def("version", [] { return std::string(vx_version()); });
  m.def("gpu_available", [] { return vx_gpu_available() != 0; });
  m.def("gpu_name", [] {
    const char *n = vx_gpu_name();
    return n ? std::optional<std::string>(n) : std::nullopt;
  });
  m.def("status_name", [](int s) { return std::string(vx_status_str((vx_status)s)); });

  nb::class_<Mesh>(m, "_Mesh")
      .def_static("load", &mesh_load, "path"_a, "timeout_s"_a = 0.0, "mem_limit"_a = 0,
                  nb::rv_policy::take_ownership)
      .def_static("from_arrays", &mesh_from_arrays, "vertices"_a.noconvert(),
                  "faces"_a.noconvert(), nb::rv_policy::take_ownership)
      .def("set_vertex_colors", &mesh_set_vertex_colors, "colors"_a.noconvert())
      .def("notes", [](const Mesh &m) { return text_of(vx_mesh_notes(m.m)); })
      .def("info", &mesh_info)
      .def("vertices", &mesh_vertices)
      .def("indices", &mesh_indices)
      .def("normals", &mesh_normals)
      .def("colors", &mesh_colors)
      .def("save", &mesh_save, "path"_a, "format"_a);

  nb::class_<Tree>(m, "_Tree")
      .def_static("load", &tree_load, "path"_a, "levels"_a = 0, "mem_limit"_a = 0,
                  nb::rv_policy::take_ownership)
      .def_static("load_bytes", &tree_load_bytes, "data"_a.noconvert(), "levels"_a = 0,
                  "mem_limit"_a = 0, nb::rv_policy::take_ownership)
      .def("save", &tree_save, "path"_a, "zstd_level"_a = 0)
      .def("encode", &tree_encode, "zstd_level"_a = 0)
      .def("info", &tree_info)
      .def("levels", &tree_levels)
      .def("notes", [](const Tree &t) { return text_of(t.notes.c_str()); })
      .def("nodes", &tree_nodes)
      .def("voxels", &tree_voxels)
      .def("node_colors", [](nb::handle self) { return tree_colors_of(self, false); })
      .def("voxel_colors", [](nb::handle self) { return tree_colors_of(self, true); })
      .def("colors", &tree_colors, "points"_a.noconvert(), "out"_a.noconvert(), "level"_a)
      .def("prune", &tree_prune, "max_error"_a, nb::rv_policy::take_ownership)
      .def("mesh", &tree_mesh, "cut"_a, "level"_a, "max_error"_a, "threads"_a,
           nb::rv_policy::take_ownership)
      .def("render", &render, "rgb"_a.noconvert(), "depth"_a.noconvert().none(), "lod_mode"_a,
           "level"_a, "lod_scale"_a, "shade"_a, "camera"_a, "device"_a)
      .def("orbit_camera", &orbit_camera, "azimuth"_a, "elevation"_a, "fov"_a)
      .def("sample_host", &sample_host, "points"_a.noconvert(), "dist"_a.noconvert(),
           "grad"_a.noconvert().none(), "flags"_a.noconvert().none(), "level"_a,
           "fail_nonfinite"_a, "device"_a, "band_cache"_a = 0, "threads"_a = 0)
      .def("sample_device", &sample_device, "points"_a, "n"_a, "dist"_a, "grad"_a, "flags"_a,
           "level"_a, "fail_nonfinite"_a, "stream"_a, "band_cache"_a = 0)
      .def("surface_points", &surface_points, "out"_a.noconvert(), "spread"_a, "seed"_a,
           "shuffle"_a)
      .def("renderer_info", [](Tree &t) {
        std::unique_lock<std::mutex> g = lock_tree(t);
        nb::dict d;
        if (!t.renderer) return d;
        vx_renderer_info i;
        std::memset(&i, 0, sizeof i);
        i.struct_size = sizeof i;
        vx_renderer_get_info(t.renderer, &i);
        d["gpu"] = i.used_gpu != 0;
        d["device"] = std::string(i.device);
        d["tree_bytes"] = i.tree_bytes;
        return d;
      })
      .def("sampler_uses_gpu", [](Tree &t) {
        std::unique_lock<std::mutex> g = lock_tree(t);
        return t.sampler && vx_sampler_uses_gpu(t.sampler);
      });

  m.def("convert", &convert, "mesh"_a, "resolution"_a, "max_error"_a, "band"_a, "device"_a,
        "mem_limit"_a, "threads"_a, "sign_rule"_a, "progress"_a.none(), "color"_a = 0,
        "color_filter"_a = 0, "path"_a.none() = nb::none(), "tile_depth"_a = 0, "gpus"_a = 0,
        nb::rv_policy::take_ownership);

  nb::class_<TiledFile>(m, "_TiledFile")
      .def_static("open", &tiled_open, "path"_a, "mem_limit"_a = 0, nb::rv_policy::take_ownership)
      .def("info", &tiled_info)
      .def("levels", &tiled_levels)
      .def("tile", &tiled_tile, "i"_a)
      .def("orbit_camera", [](const TiledFile &t, double az, double el, double fov) {
        vx_camera c;
        std::memset(&c, 0, sizeof c);
        vx_tiled_camera_orbit(t.f, az, el, fov, &c);
        return std::vector<double>{c.eye[0], c.eye[1], c.eye[2], c.target[0], c.target[1],
                                   c.target[2], c.up[0], c.up[1], c.up[2], c.fov_y_deg};
      })
      .def("load_tile", &tiled_load_tile, "i"_a, "levels"_a = 0, "mem_limit"_a = 0,
           nb::rv_policy::take_ownership)
      .def("level_tree", &tiled_level_tree, "level"_a, "mem_limit"_a = 0,
           nb::rv_policy::take_ownership)
      .def("mesh", &tiled_mesh, "threads"_a, nb::rv_policy::take_ownership);
  m.def("dlpack_info", &dlpack_info, "array"_a);
  bind_tile_tasks(m);
  bind_tiled_sample(m);
  bind_tiled_render(m);
}
