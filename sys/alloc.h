/* SPDX-License-Identifier: Apache-2.0 */
/* alloc.h - every host allocation of the library, through one replaceable allocator.
 *
 * vx_malloc & co. call the hook installed by vx_set_allocator() (include/voxlod/base.h), or the
 * C library's functions. Memory they return is 16-byte aligned (the hook promises it; vx_malloc
 * checks it, so a vx_node array can come from anywhere here). Blocks from one family are freed by
 * vx_free only: never mix them with malloc/free. Zero-size requests allocate one byte, so a
 * NULL result always means failure.
 */
#ifndef VOXLOD_SVO_ALLOC_H
#define VOXLOD_SVO_ALLOC_H

#include <stddef.h>
#include "voxlod/base.h"

VX_EXTERN_C_BEGIN

void *vx_malloc(size_t n);
void *vx_calloc(size_t count, size_t size); /* zeroed; NULL on overflow */
void *vx_realloc(void *p, size_t n);
void vx_free(void *p);
char *vx_strdup(const char *s);

/* The allocator's functions as zstd's ZSTD_customMem wants them (opaque pointer first). */
void *vx_zstd_alloc(void *opaque, size_t n);
void vx_zstd_free(void *opaque, void *p);

VX_EXTERN_C_END

#endif
