/* SPDX-License-Identifier: Apache-2.0 */
/* grid_closed.h - the cells of a level above the finest as a field dual contouring closes
 * (formats/grid_closed.c), for the level tree of a tiled file (vx_tiled_file_level_tree).
 *
 * Neighbouring nodes' planes disagree at the corners they share, and a plane's sign at a corner
 * can differ from its neighbour's next to a cell the level does not have (no surface voxel below
 * it): dual contouring has no face for such a crossing. So the field is made single-valued, the
 * export's (vx_cut_points: the mean of the cells' values, the band extended around them), the
 * grid's outer faces outside (no cell lies beyond them), and every cell around a grid edge whose
 * ends differ in sign (or hold a quantized zero, which the mesher may sign either way) is added,
 * its corners from those points, until none is missing. A cell is added only where all its
 * corners have values (the extension reaches `band` cells out); the mesher counts any crossing
 * left open.
 */
#ifndef VOXLOD_FORMATS_GRID_CLOSED_H
#define VOXLOD_FORMATS_GRID_CLOSED_H

#include "formats/grid_cut.h"

/* The cells of cut c (and those added) in Morton order with their corners quantized at band:
 * *codes and *vox from vx_malloc, *n of them. Runs on all cores. */
vx_status vx_cut_closed(const vx_cut *c, float band, uint64_t limit, uint64_t **codes,
                        vx_voxel **vox, uint64_t *n, vx_error *err);

#endif
