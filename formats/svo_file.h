/* svo_file.h - the .svo file: header + zstd-compressed sections, level by level.
 * The byte-level specification is formats/SVO_FORMAT.md.
 *
 * Writing is atomic: the file is written to a temporary name beside the target, flushed, fsynced
 * and renamed; on any failure the temporary is removed and an existing target is left untouched.
 * Reading distrusts every byte: sizes are checked against the file size and the memory limit before
 * any allocation, every section's checksum is verified, child indices are rebuilt from masks and
 * the tree is validated before it is returned.
 */
#ifndef VOXLOD_FORMATS_SVO_FILE_H
#define VOXLOD_FORMATS_SVO_FILE_H

#include "svo/svo.h"

VX_EXTERN_C_BEGIN

typedef struct vx_read_opts {
  int max_level;      /* read levels 0..max_level only (nodes); < 0 or >= depth: everything */
  uint64_t mem_limit; /* refuse files whose decoded size exceeds this; 0: 16 GiB default */
} vx_read_opts;

typedef struct vx_file_info {
  uint32_t version;
  uint64_t file_bytes;
  uint64_t level_disk_bytes[VX_MAX_DEPTH + 1]; /* compressed bytes of each level's section */
  uint64_t header_bytes;
} vx_file_info;

/* Writes t to path atomically. level compression: zstd level (0: by size: 19 under 8 MiB decoded, 9 under 64 MiB, 3 above). */
vx_status vx_svo_write(const char *path, const vx_tree *t, int zstd_level, vx_error *err);

/* Serializes to memory (for tests and fuzzing). *out is malloc'ed; caller frees. */
vx_status vx_svo_encode(const vx_tree *t, int zstd_level, uint8_t **out, size_t *out_size,
                        vx_error *err);

/* Reads a file. opts and info may be NULL. */
vx_status vx_svo_read(const char *path, const vx_read_opts *opts, vx_tree *out,
                      vx_file_info *info, vx_error *err);

/* Decodes from memory; same checks as vx_svo_read. */
vx_status vx_svo_decode(const uint8_t *data, size_t size, const vx_read_opts *opts, vx_tree *out,
                        vx_file_info *info, vx_error *err);

VX_EXTERN_C_END

#endif
