/* SPDX-License-Identifier: Apache-2.0 */
// common.h - what the extension's source files share: library text and statuses as Python
// strings and exceptions, paths as the file system's bytes, devices, the Mesh handle.
#ifndef VOXLOD_PYTHON_COMMON_H
#define VOXLOD_PYTHON_COMMON_H

#include <nanobind/nanobind.h>

#include <cstring>
#include <string>
#include <vector>

#include "voxlod.h"

namespace nb = nanobind;

namespace vxpy {

// Text from the library as a Python str. Messages and notes may quote a file name, which need
// not be UTF-8: such bytes are shown as \xNN escapes instead of failing.
inline nb::str text_of(const char *t) {
  PyObject *o = PyUnicode_DecodeUTF8(t, (Py_ssize_t)std::strlen(t), "backslashreplace");
  if (!o) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

// Raises voxlod.Error (the subclass for the status) with the library's message.
[[noreturn]] inline void raise_status(vx_status s, const vx_error &e) {
  nb::object make = nb::module_::import_("voxlod._errors").attr("_make_error");
  nb::object exc = make((int)s, text_of(e.msg[0] ? e.msg : vx_status_str(s)));
  PyErr_SetObject((PyObject *)Py_TYPE(exc.ptr()), exc.ptr());
  throw nb::python_error();
}

inline void check(vx_status s, const vx_error &e) {
  if (s != VX_OK) raise_status(s, e);
}

inline vx_error no_error() {
  vx_error e;
  std::memset(&e, 0, sizeof e);
  return e;
}

// A new handle whose member `field` holds what call(&raw, &err) made, the call run without the
// GIL; the call's error raised instead (nothing made then).
template <class Handle, class Raw, class Call> Handle *made_by(Raw *Handle::*field, Call &&call) {
  vx_error e = no_error();
  Raw *raw = nullptr;
  vx_status s;
  {
    nanobind::gil_scoped_release rel;
    s = call(&raw, &e);
  }
  check(s, e);
  Handle *r = new Handle();
  r->*field = raw;
  return r;
}

// A file path as the file system's bytes (the package passes os.fsencode(path)), so that names
// that are not UTF-8 work. An embedded NUL would cut the name for the C library: refused, as
// Python's open() refuses it.
inline std::string path_of(const nb::bytes &b) {
  std::string p(b.c_str(), b.size());
  if (p.find('\0') != std::string::npos) throw nb::value_error("embedded null character in path");
  return p;
}

inline vx_device device_of(int d) {
  return d == 1 ? VX_DEVICE_CPU : d == 2 ? VX_DEVICE_GPU : VX_DEVICE_AUTO;
}

// A tiled file opened for reading tile by tile (the GIL released meanwhile); raises on failure.
inline vx_tiled_file *open_tiled(const nb::bytes &path, uint64_t mem_limit) {
  const std::string p = path_of(path);
  vx_read_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.mem_limit = mem_limit;
  vx_error e = no_error();
  vx_tiled_file *f = nullptr;
  vx_status s;
  {
    nb::gil_scoped_release rel;
    s = vx_tiled_file_open(p.c_str(), &o, &f, &e);
  }
  check(s, e);
  return f;
}

// A mesh handle (voxlod.Mesh's).
struct Mesh {
  vx_mesh *m = nullptr;
  ~Mesh() { vx_mesh_free(m); }
};

// The render options of an image of height x width; camera: (eye xyz, target xyz, up xyz, fov),
// or empty for the default orbit view (checked in voxlod/_tree.py).
inline vx_render_opts render_opts(size_t height, size_t width, int lod_mode, int level,
                                  float lod_scale, int shade, const std::vector<double> &camera) {
  vx_render_opts o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.height = (uint32_t)height;
  o.width = (uint32_t)width;
  o.lod = (vx_lod_mode)lod_mode;
  o.level = level;
  o.lod_scale = lod_scale;
  o.shade = (vx_shade)shade;
  if (camera.size() == 10) {
    for (int i = 0; i < 3; i++) {
      o.camera.eye[i] = camera[i];
      o.camera.target[i] = camera[3 + i];
      o.camera.up[i] = camera[6 + i];
    }
    o.camera.fov_y_deg = camera[9];
  }
  return o;
}

} // namespace vxpy

// What the module's other source files add to it (NB_MODULE in module.cpp calls them): the
// tiled build as tasks (tile_tasks.cpp), voxlod.TiledFile.sample (tiled_sample.cpp) and
// voxlod.TiledFile.render (tiled_render.cpp).
void bind_tile_tasks(nanobind::module_ &m);
void bind_tiled_sample(nanobind::module_ &m);
void bind_tiled_render(nanobind::module_ &m);

#endif
