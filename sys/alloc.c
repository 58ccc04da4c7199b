/* SPDX-License-Identifier: Apache-2.0 */
/* alloc.c - the allocator hook (alloc.h, vx_set_allocator in include/voxlod/base.h). */
#include "sys/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *std_alloc(void *user, size_t n) {
  (void)user;
  return malloc(n);
}
static void *std_realloc(void *user, void *p, size_t n) {
  (void)user;
  return realloc(p, n);
}
static void std_free(void *user, void *p) {
  (void)user;
  free(p);
}

static vx_allocator hook = {std_alloc, std_realloc, std_free, NULL};

vx_status vx_set_allocator(const vx_allocator *a) {
  if (!a) {
    hook.alloc_fn = std_alloc;
    hook.realloc_fn = std_realloc;
    hook.free_fn = std_free;
    hook.user = NULL;
    return VX_OK;
  }
  if (!a->alloc_fn || !a->realloc_fn || !a->free_fn) return VX_ERR_INVALID_ARG;
  hook = *a;
  return VX_OK;
}

/* A block the hook returned misaligned is given back: the tree's nodes rely on 16 bytes. */
static void *aligned_or_null(void *p) {
  if (p && ((uintptr_t)p & 15u) != 0) {
    hook.free_fn(hook.user, p);
    return NULL;
  }
  return p;
}

void *vx_malloc(size_t n) { return aligned_or_null(hook.alloc_fn(hook.user, n ? n : 1)); }

void *vx_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  void *p = vx_malloc(count * size);
  if (p) memset(p, 0, count * size);
  return p;
}

/* Not checked for alignment: a misaligned block cannot be refused without losing the caller's
 * data. The hook's contract (base.h) promises 16 bytes. */
void *vx_realloc(void *p, size_t n) { return hook.realloc_fn(hook.user, p, n ? n : 1); }

void vx_free(void *p) {
  if (p) hook.free_fn(hook.user, p);
}

char *vx_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = (char *)vx_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void *vx_zstd_alloc(void *opaque, size_t n) {
  (void)opaque;
  return vx_malloc(n);
}
void vx_zstd_free(void *opaque, void *p) {
  (void)opaque;
  vx_free(p);
}
