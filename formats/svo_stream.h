/* svo_stream.h - writing a .svo file from a level-by-level stream (svo/stream.h) that may live in
 * temporary files, with bounded memory; and the codec constants the in-memory writer
 * (svo_file.c) and this one must share to produce the same bytes.
 *
 * The bytes are those vx_svo_write gives for the same tree (formats/SVO_FORMAT.md): same records,
 * same zstd parameters, same checks. Each section is compressed as zstd would compress it in one
 * call: with zstd worker threads (sections of big files, when libzstd has them) zstd's streaming
 * output does not depend on how the input is fed, so sections are fed in 1 MiB pieces; otherwise
 * (single-threaded zstd, i.e. files under 64 MiB decoded or a one-core machine) the section is
 * packed whole in memory and compressed in one call, exactly as vx_svo_write does.
 */
#ifndef VOXLOD_FORMATS_SVO_STREAM_H
#define VOXLOD_FORMATS_SVO_STREAM_H

#include "svo/stream.h"

VX_EXTERN_C_BEGIN

/* ---- shared with svo_file.c (keep the two writers in step) ---------------------------------- */
/* ---- the streaming writer ------------------------------------------------------------------- */

/* Writes the stream to path atomically (formats/atomic_file.h), the same bytes vx_svo_write would
 * write for the tree the stream holds. Memory: a few MiB of buffers and zstd's contexts, plus the
 * largest packed section when zstd is single-threaded (see above). The compressed sections are
 * staged in an unlinked temporary file in s->tmp_dir. progress (may be NULL) is called as the
 * sections are compressed and copied; a nonzero return stops with VX_ERR_INTERRUPTED, and then,
 * as on every failure, no file is written and an existing one is left untouched. */
vx_status vx_svo_write_stream(const char *path, vx_stream *s, int zstd_level,
                              vx_progress_fn progress, void *user, vx_error *err);

VX_EXTERN_C_END

#endif
