/* SPDX-License-Identifier: Apache-2.0 */
/* nvdb_write_stub.c - .nvdb export in a build without the NanoVDB headers: refused clearly. */
#include "formats/grid_export.h"

int vx_nvdb_write_available(void) { return 0; }

vx_status vx_nvdb_write(const char *path, const vx_grid_points *g, uint64_t *bytes, vx_error *err) {
  (void)path;
  (void)g;
  *bytes = 0;
  return vx_error_set(err, VX_ERR_FORMAT, "this voxlod was built without the NanoVDB headers "
                      "(libnanovdb-dev): .nvdb export is unavailable");
}
