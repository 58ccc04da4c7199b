/* SPDX-License-Identifier: Apache-2.0 */
/* vdb_io_stub.c - .vdb export and import in a build without libopenvdb: refused clearly. */
#include <string.h>

#include "formats/grid_export.h"
#include "formats/vdb_read.h"

int vx_vdb_write_available(void) { return 0; }
int vx_vdb_read_available(void) { return 0; }

vx_status vx_vdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes, vx_error *err) {
  (void)path;
  (void)g;
  *bytes = 0;
  return vx_error_set(err, VX_ERR_FORMAT, "this voxlod was built without OpenVDB (libopenvdb-dev): "
                      ".vdb export is unavailable");
}

vx_status vx_vdb_surface_read(const char *path, const char *name, uint32_t resolution, float band,
                              int threads, uint64_t mem_limit, vx_vdb_surface *out, vx_error *err) {
  (void)name;
  (void)resolution;
  (void)band;
  (void)threads;
  (void)mem_limit;
  memset(out, 0, sizeof *out);
  return vx_error_set(err, VX_ERR_FORMAT, "cannot read '%s': this voxlod was built without OpenVDB "
                      "(libopenvdb-dev)", path);
}
