/* SPDX-License-Identifier: Apache-2.0 */
/* vdb_scan.c - our own parse of an OpenVDB file's outer structure (vdb_read.h): header, file
 * metadata, grid descriptors and each grid's metadata, never its tree.
 *
 * Layout (OpenVDB's io::Archive, file versions 221..224, little-endian):
 *   int64 magic 0x56444220 | uint32 file version | uint32 library major, minor |
 *   char has_grid_offsets | (versions < 222: char compressed) | 36 bytes UUID text |
 *   metadata map | int32 grid count | grids
 * A metadata map is uint32 count, then per entry: string name, string type, uint32 size and that
 * many value bytes. A string is uint32 length and its bytes. A grid starts with its descriptor:
 * string unique name (a name repeated in the file gets "\x1e<n>" appended), string tree type
 * ("Tree_float_5_4_3", "_HalfFloat" appended when saved as half floats), string instance parent,
 * int64 grid, block and end positions; at the grid position: (versions >= 222) uint32
 * compression flags, the grid's metadata map (its "class" entry: "level set", "fog volume", ...),
 * then the transform and tree, which this scan does not read. With grid offsets the next
 * descriptor starts at the end position; a stream without them can be listed up to its first
 * grid only.
 *
 * Distrust: every length, count and position is checked against the bytes that remain before it
 * is used, positions must move forward, and nothing is allocated from a count: strings are read
 * into fixed buffers or skipped, so a hostile header costs a few reads at most.
 */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "formats/vdb_read.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define VDB_MAGIC "\x20\x42\x44\x56\x00\x00\x00\x00"
#define VDB_VERSION_MIN 221u
#define VDB_VERSION_MAX 224u
#define MAX_STRING (1u << 20) /* names and type names longer than this are taken as damage */

typedef struct src {
  const uint8_t *mem;
  FILE *f;
  uint64_t size, pos;
  const char *name;
  vx_error *err;
} src;

static vx_status truncated(src *s, const char *what) {
  return vx_error_set(s->err, VX_ERR_CORRUPT, "%s: truncated or damaged VDB file (%s at byte %llu "
                      "of %llu)", s->name, what, (unsigned long long)s->pos,
                      (unsigned long long)s->size);
}

static vx_status get(src *s, void *dst, uint64_t n, const char *what) {
  if (n > s->size - s->pos) return truncated(s, what);
  if (s->mem) {
    memcpy(dst, s->mem + s->pos, (size_t)n);
  } else if (fseeko(s->f, (off_t)s->pos, SEEK_SET) != 0 || fread(dst, 1, (size_t)n, s->f) != n) {
    return vx_error_set(s->err, VX_ERR_IO, "%s: cannot read: %s", s->name,
                        ferror(s->f) ? strerror(errno) : "unexpected end");
  }
  s->pos += n;
  return VX_OK;
}

static vx_status skip(src *s, uint64_t n, const char *what) {
  if (n > s->size - s->pos) return truncated(s, what);
  s->pos += n;
  return VX_OK;
}

static vx_status get_u32(src *s, uint32_t *v, const char *what) {
  uint8_t b[4];
  vx_status st = get(s, b, 4, what);
  *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
  return st;
}

static vx_status get_i64(src *s, int64_t *v, const char *what) {
  uint8_t b[8];
  vx_status st = get(s, b, 8, what);
  uint64_t u = 0;
  for (int i = 7; i >= 0; i--) u = u << 8 | b[i];
  memcpy(v, &u, sizeof u);
  return st;
}

/* A string into buf (cap bytes with the NUL; longer ones are cut: *whole = 0) or skipped
 * (buf NULL). */
static vx_status get_string(src *s, char *buf, size_t cap, int *whole, const char *what) {
  uint32_t n;
  vx_status st = get_u32(s, &n, what);
  if (st != VX_OK) return st;
  if (n > MAX_STRING || n > s->size - s->pos)
    return vx_error_set(s->err, VX_ERR_CORRUPT, "%s: damaged VDB file (%s of %u bytes at byte "
                        "%llu)", s->name, what, n, (unsigned long long)(s->pos - 4));
  if (whole) *whole = 1;
  if (!buf) return skip(s, n, what);
  size_t take = n < cap - 1 ? n : cap - 1;
  if ((st = get(s, buf, take, what)) != VX_OK) return st;
  buf[take] = 0;
  if (take < n) {
    if (whole) *whole = 0;
    return skip(s, n - take, what);
  }
  return VX_OK;
}

/* A metadata map; its "class" string goes to cls (may be NULL). */
static vx_status metadata(src *s, char *cls, size_t cls_cap) {
  uint32_t count;
  vx_status st = get_u32(s, &count, "metadata count");
  if (st != VX_OK) return st;
  if (count > (s->size - s->pos) / 12) /* name, type and size: 12 bytes at least each */
    return vx_error_set(s->err, VX_ERR_CORRUPT, "%s: damaged VDB file (%u metadata entries in %llu "
                        "bytes)", s->name, count, (unsigned long long)(s->size - s->pos));
  for (uint32_t i = 0; i < count; i++) {
    char key[64], type[64];
    uint32_t n;
    if ((st = get_string(s, key, sizeof key, NULL, "a metadata name")) != VX_OK ||
        (st = get_string(s, type, sizeof type, NULL, "a metadata type")) != VX_OK ||
        (st = get_u32(s, &n, "a metadata size")) != VX_OK)
      return st;
    if (n > s->size - s->pos) return truncated(s, "a metadata value");
    if (cls && strcmp(key, "class") == 0 && strcmp(type, "string") == 0 && n < cls_cap) {
      if ((st = get(s, cls, n, "the grid class")) != VX_OK) return st;
      cls[n] = 0;
    } else if ((st = skip(s, n, "a metadata value")) != VX_OK) {
      return st;
    }
  }
  return VX_OK;
}

static void classify(vx_vdb_grid_desc *g) {
  static const char half[] = "_HalfFloat";
  size_t n = strlen(g->type), hn = sizeof half - 1;
  char base[sizeof g->type];
  memcpy(base, g->type, n + 1);
  if (n > hn && strcmp(base + n - hn, half) == 0) base[n - hn] = 0;
  g->is_float = strcmp(base, "Tree_float_5_4_3") == 0;
  g->is_level_set = strcmp(g->cls, "level set") == 0;
}

static vx_status scan(src *s, vx_vdb_listing *l) {
  memset(l, 0, sizeof *l);
  uint8_t magic[8];
  vx_status st;
  if (s->size < 8 || get(s, magic, 8, "the signature") != VX_OK || memcmp(magic, VDB_MAGIC, 8) != 0)
    return vx_error_set(s->err, VX_ERR_FORMAT, "%s: not an OpenVDB file (bad signature)", s->name);
  if ((st = get_u32(s, &l->file_version, "the file version")) != VX_OK) return st;
  if (l->file_version > VDB_VERSION_MAX)
    return vx_error_set(s->err, VX_ERR_VERSION, "%s: VDB file version %u is newer than this reader "
                        "knows (%u)", s->name, l->file_version, VDB_VERSION_MAX);
  if (l->file_version < VDB_VERSION_MIN)
    return vx_error_set(s->err, VX_ERR_FORMAT, "%s: VDB file version %u is older than OpenVDB reads "
                        "(%u)", s->name, l->file_version, VDB_VERSION_MIN);
  uint8_t flag;
  if ((st = get_u32(s, &l->lib_major, "the library version")) != VX_OK ||
      (st = get_u32(s, &l->lib_minor, "the library version")) != VX_OK ||
      (st = get(s, &flag, 1, "the offsets flag")) != VX_OK)
    return st;
  l->has_offsets = flag != 0;
  if (l->file_version < 222 && (st = skip(s, 1, "the compression flag")) != VX_OK) return st;
  if ((st = skip(s, 36, "the UUID")) != VX_OK || (st = metadata(s, NULL, 0)) != VX_OK) return st;
  uint32_t count;
  if ((st = get_u32(s, &count, "the grid count")) != VX_OK) return st;
  if (count > (s->size - s->pos) / 36) /* three strings and three positions at least */
    return vx_error_set(s->err, VX_ERR_CORRUPT, "%s: damaged VDB file (%u grids in %llu bytes)",
                        s->name, count, (unsigned long long)(s->size - s->pos));
  l->grid_count = count;
  for (uint32_t i = 0; i < count && l->listed < VX_VDB_MAX_LISTED; i++) {
    vx_vdb_grid_desc *g = &l->grids[l->listed];
    int64_t gpos, bpos, epos;
    uint64_t start = s->pos;
    if ((st = get_string(s, g->name, sizeof g->name, &g->name_fits, "a grid name")) != VX_OK ||
        (st = get_string(s, g->type, sizeof g->type, NULL, "a grid type")) != VX_OK ||
        (st = get_string(s, NULL, 0, NULL, "an instance parent")) != VX_OK ||
        (st = get_i64(s, &gpos, "a grid position")) != VX_OK ||
        (st = get_i64(s, &bpos, "a grid position")) != VX_OK ||
        (st = get_i64(s, &epos, "a grid position")) != VX_OK)
      return st;
    if (l->has_offsets) {
      if (gpos < (int64_t)s->pos || bpos < gpos || epos < bpos || (uint64_t)epos > s->size ||
          (uint64_t)epos <= start)
        return vx_error_set(s->err, VX_ERR_CORRUPT, "%s: damaged VDB file (grid %u's positions "
                            "%lld, %lld, %lld are outside the file of %llu bytes)", s->name, i,
                            (long long)gpos, (long long)bpos, (long long)epos,
                            (unsigned long long)s->size);
      s->pos = (uint64_t)gpos;
    }
    strcpy(g->cls, "unknown");
    if (l->file_version >= 222 && (st = skip(s, 4, "the grid compression")) != VX_OK) return st;
    if ((st = metadata(s, g->cls, sizeof g->cls)) != VX_OK) return st;
    classify(g);
    l->listed++;
    if (!l->has_offsets) break; /* the next grid starts after this one's tree */
    s->pos = (uint64_t)epos;
  }
  return VX_OK;
}

vx_status vx_vdb_scan_memory(const uint8_t *data, size_t size, vx_vdb_listing *out, vx_error *err) {
  src s;
  memset(&s, 0, sizeof s);
  s.mem = data;
  s.size = size;
  s.name = "(memory)";
  s.err = err;
  return scan(&s, out);
}

vx_status vx_vdb_scan(const char *path, vx_vdb_listing *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  struct stat st;
  if (stat(path, &st) != 0)
    return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return vx_error_set(err, VX_ERR_IO, "'%s' is not a regular file", path);
  src s;
  memset(&s, 0, sizeof s);
  s.f = fopen(path, "rb");
  if (!s.f) return vx_error_set(err, VX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  s.size = (uint64_t)st.st_size;
  s.name = path;
  s.err = err;
  vx_status r = scan(&s, out);
  fclose(s.f);
  return r;
}

/* ---- choosing the grid ------------------------------------------------------------------------ */

/* The name as OpenVDB prints it: "\x1e" + n becomes "[n]". */
static void display_name(const char *raw, char *out, size_t cap) {
  const char *sep = strchr(raw, '\x1e');
  if (!sep) snprintf(out, cap, "%s", raw);
  else snprintf(out, cap, "%.*s[%s]", (int)(sep - raw), raw, sep + 1);
}

static int name_matches(const char *raw, const char *want) {
  if (strcmp(raw, want) == 0) return 1;
  char shown[160];
  display_name(raw, shown, sizeof shown);
  if (strcmp(shown, want) == 0) return 1;
  const char *sep = strchr(raw, '\x1e');
  return sep && strlen(want) == (size_t)(sep - raw) && strncmp(raw, want, (size_t)(sep - raw)) == 0;
}

/* "float level set", "vec3s fog volume" */
static void kind_text(const vx_vdb_grid_desc *g, char *out, size_t cap) {
  const char *t = g->type;
  size_t n = 0;
  if (strncmp(t, "Tree_", 5) == 0) {
    t += 5;
    while (t[n] && t[n] != '_') n++;
  } else {
    n = strlen(t);
  }
  if (strcmp(g->cls, "unknown") == 0) snprintf(out, cap, "%.*s grid of unknown class", (int)n, t);
  else snprintf(out, cap, "%.*s %s", (int)n, t, g->cls);
}

static void list_text(const vx_vdb_listing *l, char *out, size_t cap) {
  size_t at = 0;
  out[0] = 0;
  for (uint32_t i = 0; i < l->listed && at + 1 < cap; i++) {
    char shown[160], kind[96];
    display_name(l->grids[i].name, shown, sizeof shown);
    kind_text(&l->grids[i], kind, sizeof kind);
    int w = snprintf(out + at, cap - at, "%s%s (%s)", i ? ", " : "", shown, kind);
    if (w < 0) break;
    at += (size_t)w;
  }
  if (l->grid_count > l->listed && at + 1 < cap)
    snprintf(out + at, cap - at, "%s%u more", l->listed ? ", " : "", l->grid_count - l->listed);
  if (l->grid_count == 0) snprintf(out, cap, "none");
}

vx_status vx_vdb_pick(const vx_vdb_listing *l, const char *path, const char *name, uint32_t *index,
                      vx_error *err) {
  char list[320];
  list_text(l, list, sizeof list);
  for (uint32_t i = 0; i < l->listed; i++) {
    const vx_vdb_grid_desc *g = &l->grids[i];
    if (name ? !name_matches(g->name, name) : !(g->is_float && g->is_level_set)) continue;
    if (!g->is_float || !g->is_level_set) {
      char kind[96];
      kind_text(g, kind, sizeof kind);
      return vx_error_set(err, VX_ERR_FORMAT, "%s: grid '%s' is a %s, not a float level set", path,
                          name, kind);
    }
    if (!g->name_fits)
      return vx_error_set(err, VX_ERR_FORMAT, "%s: the grid's name is longer than %zu bytes", path,
                          sizeof g->name - 1);
    *index = i;
    return VX_OK;
  }
  if (l->listed < l->grid_count && name) {
    *index = l->listed; /* a stream: the reader looks for it by name */
    return VX_OK;
  }
  if (name)
    return vx_error_set(err, VX_ERR_FORMAT, "%s: no grid named '%s' (grids: %s)", path, name, list);
  return vx_error_set(err, VX_ERR_FORMAT, "%s: no float level set in the file (grids: %s)", path,
                      list);
}
