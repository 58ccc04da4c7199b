/* SPDX-License-Identifier: Apache-2.0 */
/* precheck_ply.c - a PLY file's counts against its size, read the way assimp 5.2 reads them.
 *
 * assimp sizes its arrays from counts before it reads what they count: an element count from the
 * header, and in the data every list count (it resizes the list, 8 bytes a value, then reads the
 * values). Both are checked here before assimp sees the file:
 * - header: each element's count times the fewest bytes one element takes (ascii: 2 per property,
 *   binary: the scalar sizes plus each list's count field) against the bytes after the header;
 * - binary data: walked value by value; a list of c values of s bytes needs c*s bytes left;
 * - ascii data: assimp's line reader is followed exactly, because its quirks decide which bytes a
 *   count is read from. A line ends at LF, CR, NUL or form feed; a line that starts with one of
 *   those is first skipped up to the next LF (content included); the line buffer is reused, so a
 *   line shorter than the one before keeps that line's bytes after its end, and an instance with
 *   fewer values than properties reads its last properties from there; when the data ends before
 *   the declared instances, every remaining instance re-reads the last line. A list count is
 *   refused when its line cannot hold its values (c values need 2c bytes less one), when it would
 *   be read from a previous line's bytes, or when instances would re-read the last line.
 * assimp 5.2 reads the data of the elements whose names it knows (vertex, face, tristrips, edge,
 * material) and no data at all for any other: in binary the next element starts where the
 * unknown one's bytes do (followed so here), in ascii it starts in stale bytes of the line buffer
 * (refused where such an element comes before one assimp reads). Binary data that ends early is
 * refused: assimp reads on into the line feeds that fill its 16 MiB block.
 * Values are consumed as assimp's parsers consume them (digits for integers, its own float
 * grammar, where a non-number throws and ends the import). Only the first n bytes are followed; a
 * file that goes on past them is left to the import's memory limit for the rest. Each rule was
 * checked against assimp 5.2.5 on files made to show it (tests/test_formats_import_limits.c).
 */
#include "formats/mesh_precheck.h"
#include "formats/precheck_util.h"
#include "formats/ply_types.h"
#include "sys/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int type_real(int t) { return t == T_FLOAT || t == T_DOUBLE; }
static int type_signed(int t) { return t == T_CHAR || t == T_SHORT || t == T_INT; }

#define PLY_ELEMS 64
#define PLY_PROPS 256

typedef struct ply_prop {
  unsigned char list, count_type, type;
  unsigned char index; /* a list named vertex_indices or vertex_index: vertex numbers */
} ply_prop;

typedef struct ply_elem {
  const unsigned char *name;
  size_t name_len;
  uint64_t count;
  int known; /* a semantic assimp knows: its data is read; any other element's is not (below) */
  int props;
  uint64_t bin_bytes; /* fewest bytes of one element in binary */
  ply_prop prop[PLY_PROPS];
} ply_elem;

typedef struct ply_header {
  int ascii; /* -1 until the format line */
  int n;
  size_t data; /* where assimp starts reading the data */
  ply_elem elem[PLY_ELEMS];
} ply_header;

static vx_status refuse_elem(vx_error *err, const char *what, const ply_elem *e, const char *fmt,
                             ...) {
  char name[48], msg[240];
  vx_pc_printable(e->name, e->name_len, name, sizeof name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return vx_error_set(err, VX_ERR_CORRUPT, "cannot read %s: %s (element '%s')", what, msg, name);
}

/* ---- header ---------------------------------------------------------------------------------- */

#define W_IS(k, lit) (wl[k] == sizeof(lit) - 1 && memcmp(w[k], lit, sizeof(lit) - 1) == 0)

/* The header as assimp reads it. 1: parsed, 0: not a PLY header this check understands (the
 * importer's to judge), -1: refused (err set). */
static int parse_header(const unsigned char *p, size_t n, ply_header *h, vx_status *st,
                        const char *what, vx_error *err) {
  size_t pos;
  if (n >= 4 && memcmp(p, "ply\n", 4) == 0)
    pos = 4;
  else if (n >= 5 && memcmp(p, "ply\r\n", 5) == 0)
    pos = 5;
  else
    return 0;
  h->ascii = -1;
  h->n = 0;
  ply_elem *cur = NULL;
  int open = 0; /* property lines still belong to cur: assimp ends its list at any other line */
  for (int line = 2;; line++) {
    size_t end = pos;
    while (end < n && p[end] != '\n') end++;
    if (end >= n) return 0; /* no end_header in the bytes looked at */
    const int crlf = end > pos && p[end - 1] == '\r';
    const size_t len = crlf ? end - 1 : end;
    const unsigned char *w[5];
    size_t wl[5], nw = 0, i = pos;
    while (i < len) {
      while (i < len && (p[i] == ' ' || p[i] == '\t')) i++;
      if (i >= len) break;
      size_t j = i;
      while (j < len && p[j] != ' ' && p[j] != '\t') j++;
      if (nw == 5) {
        nw = 6; /* more words than any line of interest has */
        break;
      }
      w[nw] = p + i;
      wl[nw++] = j - i;
      i = j;
    }
    pos = end + 1;
    if (line == 2) { /* assimp takes the format from the line after "ply" only */
      if (nw < 2 || !W_IS(0, "format")) return 0;
      if (W_IS(1, "ascii"))
        h->ascii = 1;
      else if (W_IS(1, "binary_little_endian"))
        h->ascii = 0;
      else if (W_IS(1, "binary_big_endian"))
        h->ascii = 2;
      else
        return 0;
      continue;
    }
    if (nw == 0) return 0;
    const int is_prop = W_IS(0, "property");
    if (!is_prop) open = 0; /* a comment too: assimp 5.2 drops the properties after one */
    if (W_IS(0, "comment") || W_IS(0, "obj_info")) continue;
    if (nw > 5) return 0;
    if (W_IS(0, "element")) {
      if (nw != 3) return 0;
      if (h->n == PLY_ELEMS) {
        *st = vx_error_set(err, VX_ERR_LIMIT,
                           "cannot read %s: its PLY header declares more than %d "
                           "elements",
                           what, PLY_ELEMS);
        return -1;
      }
      cur = &h->elem[h->n++];
      memset(cur, 0, sizeof *cur);
      open = 1;
      size_t k = 0;
      if (!vx_pc_read_u64(w[2], wl[2], &k, &cur->count) || k != wl[2]) return 0;
      cur->name = w[1];
      cur->name_len = wl[1];
      cur->known = W_IS(1, "vertex") || W_IS(1, "face") || W_IS(1, "tristrips") ||
                   W_IS(1, "edge") || W_IS(1, "material");
      if (W_IS(1, "TextureFile")) { /* assimp reads the next header line from stale bytes */
        *st = vx_error_set(err, VX_ERR_FORMAT,
                           "cannot read %s: its PLY header has an element named "
                           "'TextureFile', which assimp misreads",
                           what);
        return -1;
      }
    } else if (is_prop) {
      if (!open) continue; /* assimp ignores it */
      const int list = W_IS(1, "list");
      const int ct = list && nw > 2 ? vx_ply_type(w[2], wl[2]) : T_NONE;
      const int t = list     ? (nw > 3 ? vx_ply_type(w[3], wl[3]) : T_NONE)
                    : nw > 1 ? vx_ply_type(w[1], wl[1])
                             : T_NONE;
      const int bad = list                    ? (nw > 2 && ct == T_NONE  ? 2
                                                 : nw > 3 && t == T_NONE ? 3
                                                                         : 0)
                      : nw > 1 && t == T_NONE ? 1
                                              : 0;
      if (bad) { /* assimp skips the line and parses the next from stale bytes */
        char name[48];
        vx_pc_printable(w[bad], wl[bad], name, sizeof name);
        *st = vx_error_set(err, VX_ERR_FORMAT,
                           "cannot read %s: its PLY header names a property type "
                           "assimp does not read ('%s')",
                           what, name);
        return -1;
      }
      if (nw < (list ? 5u : 3u)) { /* no name: assimp ends the element's properties here */
        open = 0;
        continue;
      }
      if (cur->props == PLY_PROPS) {
        *st = refuse_elem(err, what, cur, "its PLY header declares more than %d properties",
                          PLY_PROPS);
        return -1;
      }
      ply_prop *q = &cur->prop[cur->props++];
      q->list = (unsigned char)list;
      q->count_type = (unsigned char)ct;
      q->type = (unsigned char)t;
      q->index = (unsigned char)(list && (W_IS(4, "vertex_indices") || W_IS(4, "vertex_index")));
      cur->bin_bytes = vx_pc_add(cur->bin_bytes, vx_ply_type_size(list ? ct : t));
    } else if (W_IS(0, "end_header")) {
      /* assimp's line reader stops at the CR of a CRLF: the data starts at the LF */
      h->data = crlf ? end : end + 1;
      return 1;
    } else if (!W_IS(0, "format")) {
      return 0; /* a line PLY does not define: the importer's to report */
    }
  }
}

/* Element counts against the bytes after the header. */
static vx_status check_counts(const ply_header *h, uint64_t size, const char *what, vx_error *err) {
  const uint64_t data = size > h->data ? size - h->data : 0;
  uint64_t need = 0, big_need = 0;
  const ply_elem *big = NULL;
  for (int i = 0; i < h->n; i++) {
    const ply_elem *e = &h->elem[i];
    if (e->props == 0 && e->count > size)
      return refuse_elem(err, what, e,
                         "its PLY header declares %llu elements without "
                         "properties, more than the file's %llu bytes",
                         (unsigned long long)e->count, (unsigned long long)size);
    const uint64_t per = h->ascii == 1 ? vx_pc_mul((uint64_t)e->props, 2) : e->bin_bytes;
    const uint64_t one = vx_pc_mul(e->count, per);
    need = vx_pc_add(need, one);
    if (!big || one > big_need) {
      big = e;
      big_need = one;
    }
  }
  if (h->ascii == 1 && need > 0) need--; /* the last value needs no separator after it */
  if (need <= data) return VX_OK;
  char name[48];
  vx_pc_printable(big->name, big->name_len, name, sizeof name);
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its PLY header declares %llu '%s' elements (%llu bytes of "
                      "%s data at the least), but only %llu bytes follow the header",
                      what, (unsigned long long)big->count, name, (unsigned long long)need,
                      h->ascii == 1 ? "ascii" : "binary", (unsigned long long)data);
}

/* ---- binary data ----------------------------------------------------------------------------- */

/* A list count as assimp converts it to unsigned int (reals saturate: their cast is undefined). */
static uint64_t bin_count(const unsigned char *b, int t, int big_endian) {
  const uint64_t u = vx_ply_raw(b, t, big_endian);
  switch (t) {
    case T_CHAR:
      return (uint32_t)(int32_t)(int8_t)u;
    case T_SHORT:
      return (uint32_t)(int32_t)(int16_t)u;
    case T_FLOAT: {
      float f;
      uint32_t v = (uint32_t)u;
      memcpy(&f, &v, 4);
      return f >= 0.0f && f < 4294967296.0f ? (uint64_t)f : UINT64_MAX;
    }
    case T_DOUBLE: {
      double d;
      memcpy(&d, &u, 8);
      return d >= 0.0 && d < 4294967296.0 ? (uint64_t)d : UINT64_MAX;
    }
    default:
      return u;
  }
}

/* assimp hands its binary reader a 16 MiB block whose bytes past the end of a smaller file are
 * line feeds: data that ends early is read on from those (a count of 0x0a0a0a0a, 1.3 GB
 * reserved) instead of failing, so it is refused. */
static vx_status check_binary(const unsigned char *p, size_t n, uint64_t size, const ply_header *h,
                              const char *what, vx_error *err) {
  uint64_t pos = h->data;
  for (int i = 0; i < h->n; i++) {
    const ply_elem *e = &h->elem[i];
    if (e->props == 0 || !e->known) continue; /* assimp reads no bytes for it */
    for (uint64_t k = 0; k < e->count; k++) {
      if (pos >= n && n < size) return VX_OK; /* past the bytes looked at */
      for (int q = 0; q < e->props; q++) {
        const ply_prop *pr = &e->prop[q];
        const uint64_t cs = vx_ply_type_size(pr->list ? pr->count_type : pr->type);
        if (pos + cs > size)
          return refuse_elem(err, what, e,
                             "its binary PLY data ends before element %llu of the "
                             "%llu declared is complete (assimp reads on past the end of the file)",
                             (unsigned long long)k, (unsigned long long)e->count);
        if (!pr->list) {
          pos += cs;
          continue;
        }
        if (pos + cs > n) return VX_OK;
        const uint64_t c = bin_count(p + pos, pr->count_type, h->ascii == 2);
        pos += cs;
        const uint64_t vs = vx_ply_type_size(pr->type), left = size - pos;
        if (c > left / vs)
          return refuse_elem(err, what, e,
                             "a list in its binary PLY data claims %llu values, "
                             "but only %llu bytes are left in the file",
                             (unsigned long long)c, (unsigned long long)left);
        pos += c * vs;
      }
    }
  }
  return VX_OK;
}

/* ---- ascii data ------------------------------------------------------------------------------ */

static int line_end(unsigned char c) { return c == '\n' || c == '\r' || c == 0 || c == '\f'; }
static int blank(unsigned char c) { return c == ' ' || c == '\t'; }

enum { L_LINE, L_LAST, L_SAME, L_EMPTY, L_VIEW };

/* assimp's getNextLine over a file read in one block (assimp reads up to 16 MiB at once; the
 * bytes looked at are far fewer). L_LINE: a line ended by a line end; L_LAST: the file's last
 * bytes without a line end (assimp reports failure but its buffer holds them, followed by the
 * bytes of an older, longer line); L_SAME: failure, the buffer keeps the previous line; L_EMPTY:
 * an empty line (past the end of the data, where assimp's block holds line feeds); L_VIEW: past
 * the bytes looked at. */
typedef struct line_reader {
  const unsigned char *p;
  size_t n, size, pos;
  int state; /* L_LINE until the reader fails for good: then L_SAME or L_EMPTY */
} line_reader;

static int next_line(line_reader *r, size_t *s, size_t *len) {
  if (r->state != L_LINE) return r->state;
  size_t pos = r->pos;
  if (pos == r->size) return r->state = L_SAME;
  if (pos >= r->n) return L_VIEW;
  if (line_end(r->p[pos])) {
    while (pos < r->size && pos < r->n && r->p[pos] != '\n') pos++;
    if (pos == r->size) return r->state = L_EMPTY;
    if (pos >= r->n) return L_VIEW;
    if (++pos == r->size) return r->state = L_SAME;
  }
  *s = pos;
  while (pos < r->size && pos < r->n && !line_end(r->p[pos])) pos++;
  if (pos == r->size) {
    *len = pos - *s;
    r->pos = pos;
    r->state = L_SAME;
    return L_LAST;
  }
  if (pos >= r->n) return L_VIEW;
  *len = pos - *s;
  r->pos = pos + 1;
  return L_LINE;
}

/* One value at l[*i], consumed as assimp's parser for type t consumes it. Past len the line's
 * terminator ('\n') or, for the last line, unknown bytes: *peek is set when those are looked at.
 * Returns 1 when assimp throws (a real that is no number), else 0; *value is at least the count
 * assimp converts (its unsigned cast of a negative or huge value saturates here). */
typedef struct line_view {
  const unsigned char *l;
  size_t len;
  int peek;
} line_view;

static unsigned char at(line_view *v, size_t k) {
  if (k < v->len) return v->l[k];
  v->peek = 1;
  return '\n';
}

/* assimp's strtoul10_64: digits; when the value wraps it returns 0 and consumes nothing. */
static size_t digits64(line_view *v, size_t k, uint64_t *value) {
  uint64_t x = 0;
  size_t j = k;
  while (vx_pc_digit(at(v, j))) {
    const uint64_t nx = x * 10u + (uint64_t)(at(v, j) - '0');
    if (nx < x) {
      *value = 0;
      return k;
    }
    x = nx;
    j++;
  }
  *value = x;
  return j;
}

static int ci3(line_view *v, size_t k, const char *s, size_t m) {
  for (size_t j = 0; j < m; j++) {
    unsigned char c = at(v, k + j);
    if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
    if (c != (unsigned char)s[j]) return 0;
  }
  return 1;
}

static int parse_value(line_view *v, size_t *i, int t, uint64_t *value) {
  size_t k = *i;
  if (!type_real(t)) { /* strtoul10 / strtol10: an optional sign for signed types, then digits */
    int neg = 0;
    if (type_signed(t) && (at(v, k) == '-' || at(v, k) == '+')) neg = at(v, k++) == '-';
    uint64_t x = 0;
    while (vx_pc_digit(at(v, k))) x = vx_pc_add(vx_pc_mul(x, 10), (uint64_t)(at(v, k++) - '0'));
    *value = neg && x ? UINT64_MAX : x;
    *i = k;
    return 0;
  }
  /* fast_atoreal_move */
  int neg = 0;
  if (at(v, k) == '-' || at(v, k) == '+') neg = at(v, k++) == '-';
  if (ci3(v, k, "nan", 3) || ci3(v, k, "inf", 3)) {
    k += 3;
    if (ci3(v, k - 3, "inf", 3) && ci3(v, k, "inity", 5)) k += 5;
    *value = UINT64_MAX;
    *i = k;
    return 0;
  }
  const unsigned char c0 = at(v, k);
  if (!vx_pc_digit(c0) && !((c0 == '.' || c0 == ',') && vx_pc_digit(at(v, k + 1)))) return 1;
  uint64_t whole = 0;
  if (c0 != '.' && c0 != ',') k = digits64(v, k, &whole);
  if ((at(v, k) == '.' || at(v, k) == ',') && vx_pc_digit(at(v, k + 1))) {
    k++;
    while (vx_pc_digit(at(v, k))) k++; /* 15 digits read, the rest skipped */
  } else if (at(v, k) == '.') {
    k++;
  }
  int big = neg && whole > 0;
  if (at(v, k) == 'e' || at(v, k) == 'E') {
    k++;
    const int eneg = at(v, k) == '-';
    if (eneg || at(v, k) == '+') k++;
    if (!vx_pc_digit(at(v, k))) return 1;
    uint64_t ex = 0;
    k = digits64(v, k, &ex);
    if (!eneg && ex > 0 && whole > 0) big = 1;
  }
  *value = big ? UINT64_MAX : whole;
  *i = k;
  return 0;
}

/* The file line (1-based) that holds byte s. */
static unsigned long long file_line(const unsigned char *p, size_t s) {
  unsigned long long line = 1;
  for (size_t k = 0; k < s; k++) line += p[k] == '\n';
  return line;
}

/* One element instance on the line p[s..s+len) (last: the file's last line without a line end).
 * VX_OK or VX_ERR_CORRUPT (refused); *throws is set where assimp throws (nothing after it is
 * read). */
static vx_status parse_instance(const unsigned char *p, size_t s, size_t len, int last,
                                const ply_elem *e, int *throws, const char *what, vx_error *err) {
  line_view v = {p + s, len, 0};
  size_t i = 0;
  int stale = 0; /* the position is in an older line's bytes: unknown */
  for (int q = 0; q < e->props; q++) {
    const ply_prop *pr = &e->prop[q];
    if (stale) {
      if (pr->list)
        return refuse_elem(err, what, e,
                           "line %llu of its ascii PLY data holds fewer values "
                           "than its properties: assimp would read a list count from an earlier "
                           "line",
                           file_line(p, s));
      continue;
    }
    while (i < len && blank(v.l[i])) i++;
    if (i == len) {
      if (last) stale = 1, q--; /* the older bytes decide: look at this property again */
      continue;                 /* at the line end: the property fails, nothing is consumed */
    }
    uint64_t c = 0;
    v.peek = 0;
    if (parse_value(&v, &i, pr->list ? pr->count_type : pr->type, &c))
      return v.peek && last ? refuse_elem(err, what, e,
                                          "the last line of its ascii PLY data "
                                          "ends inside a value")
                            : (*throws = 1, VX_OK);
    if (v.peek && last) { /* the value may go on in older bytes */
      if (pr->list)
        return refuse_elem(err, what, e,
                           "the last line of its ascii PLY data (line %llu) ends "
                           "inside a list count",
                           file_line(p, s));
      stale = 1;
      continue;
    }
    if (pr->list) {
      const uint64_t left = len - i;
      if (c == UINT64_MAX)
        return refuse_elem(err, what, e,
                           "a list on line %llu of its ascii PLY data has a "
                           "negative or overflowing count (assimp casts it to a size)",
                           file_line(p, s));
      if (c > left / 2 + 1)
        return refuse_elem(err, what, e,
                           "a list on line %llu of its ascii PLY data claims %llu "
                           "values, more than the line holds",
                           file_line(p, s), (unsigned long long)c);
      int failed = 0;
      for (uint64_t k = 0; k < c; k++) {
        while (i < len && blank(v.l[i])) i++;
        if (i == len) {
          failed = !last;
          stale = last;
          break;
        }
        uint64_t ignored;
        v.peek = 0;
        if (parse_value(&v, &i, pr->type, &ignored)) {
          if (!(v.peek && last)) return *throws = 1, VX_OK;
          stale = 1;
          break;
        }
        if (v.peek && last) {
          stale = 1;
          break;
        }
      }
      if (failed || stale) continue;
    }
    while (i < len && blank(v.l[i])) i++; /* SkipSpacesAndLineEnd: past the line end, if at it */
    if (i == len) stale = 1;
  }
  return VX_OK;
}

static vx_status check_ascii(const unsigned char *p, size_t n, uint64_t size, const ply_header *h,
                             const char *what, vx_error *err) {
  line_reader r = {p, n, size > n ? n + 1 : (size_t)size, h->data, L_LINE};
  size_t s = 0, len = 0;
  int got = next_line(&r, &s, &len); /* the line after the header */
  int last_read = -1; /* the last element assimp reads lines for */
  for (int i = 0; i < h->n; i++)
    if (h->elem[i].known && h->elem[i].count > 0) last_read = i;
  for (int i = 0; i < h->n; i++) {
    const ply_elem *e = &h->elem[i];
    if (!e->known) {
      /* assimp 5.2 reads no line for it but cuts its count of lines off the front of its line
       * buffer, so the next element starts in stale bytes: refused where one follows */
      if (e->count > 0 && i < last_read)
        return refuse_elem(err, what, e,
                           "an element assimp does not know comes before the "
                           "elements it reads, which assimp 5.2 would then read from the wrong "
                           "lines");
      continue;
    }
    const int parsed = e->props > 0;
    for (uint64_t k = 0; k < e->count; k++) {
      if (got == L_VIEW || (parsed && got == L_EMPTY)) return VX_OK;
      if (!parsed && (got == L_SAME || got == L_EMPTY)) break;
      if (parsed) {
        if (got == L_SAME)
          return refuse_elem(err, what, e,
                             "its ascii PLY data ends after %llu of the %llu "
                             "elements declared (assimp would read the last line again for each "
                             "missing one)",
                             (unsigned long long)k, (unsigned long long)e->count);
        int throws = 0;
        vx_status st = parse_instance(p, s, len, got == L_LAST, e, &throws, what, err);
        if (st != VX_OK || throws) return st; /* assimp throws: the import ends there */
      }
      got = next_line(&r, &s, &len);
    }
  }
  return VX_OK;
}

/* ---- where assimp starts a binary PLY's data ----------------------------------------------------
 *
 * assimp 5.2 starts the data of a binary PLY one byte early when the end_header line ends in CR LF
 * (at the LF), and one byte late when the data's first byte is a line feed (it takes it for an
 * empty line after the header): both files are valid, and both are read as garbage. Such a file
 * is given to assimp rewritten: the header's last line ends in LF alone, and, where the data
 * starts with a line feed, the first vertex trades places with the first one that does not start
 * with one, every vertex index of the two traded in the lists named vertex_indices or
 * vertex_index (the triangles stay the same; the data is walked as assimp walks it, check_binary).
 * The vertex element must then be the first one assimp reads, of fixed size. */

static void bin_put(unsigned char *b, int t, int big_endian, uint64_t u) {
  const uint64_t sz = vx_ply_type_size(t);
  for (uint64_t k = 0; k < sz; k++) b[big_endian ? sz - 1 - k : k] = (unsigned char)(u >> (8 * k));
}

/* Vertex numbers a and b traded in the index lists of the data at d[0, n) (as assimp reads it).
 * 0, or -1 when b does not fit an index list's type (a is 0). */
static int trade_indices(unsigned char *d, uint64_t n, const ply_header *h, uint64_t a,
                         uint64_t b) {
  uint64_t pos = 0;
  const int be = h->ascii == 2;
  for (int i = 0; i < h->n; i++) {
    const ply_elem *e = &h->elem[i];
    if (e->props == 0 || !e->known) continue;
    for (uint64_t k = 0; k < e->count; k++)
      for (int q = 0; q < e->props; q++) {
        const ply_prop *pr = &e->prop[q];
        const uint64_t cs = vx_ply_type_size(pr->list ? pr->count_type : pr->type);
        if (pos + cs > n) return 0; /* ends early: the check refuses it */
        if (!pr->list) {
          pos += cs;
          continue;
        }
        const uint64_t c = bin_count(d + pos, pr->count_type, be), vs = vx_ply_type_size(pr->type);
        pos += cs;
        if (c > (n - pos) / vs) return 0;
        if (pr->index && !type_real(pr->type)) {
          if (b >> (8 * vs - (type_signed(pr->type) ? 1 : 0))) return -1;
          for (uint64_t v = 0; v < c; v++) {
            const uint64_t x = vx_ply_raw(d + pos + v * vs, pr->type, be);
            if (x == a || x == b) bin_put(d + pos + v * vs, pr->type, be, x == a ? b : a);
          }
        }
        pos += c * vs;
      }
  }
  return 0;
}

/* Parses p[0, n)'s header into h; 1 when it is a binary PLY that assimp would misplace (*crlf:
 * its last header line ends in CR LF; *lf: its data starts with a line feed; *data: where it
 * starts), else 0 (s set when the header is refused). */
static int misread(const unsigned char *p, size_t n, ply_header *h, int *crlf, int *lf,
                   size_t *data, vx_status *s, const char *what, vx_error *err) {
  const int parsed = parse_header(p, n, h, s, what, err);
  *data = parsed > 0 ? h->data : 0;
  *crlf = parsed > 0 && *data < n && p[*data] == '\n' && *data > 0 && p[*data - 1] == '\r';
  if (*crlf) (*data)++;
  *lf = parsed > 0 && *data < n && p[*data] == '\n';
  return parsed > 0 && h->ascii != 1 && (*crlf || *lf);
}

int vx_ply_misread(const unsigned char *p, size_t n) {
  ply_header *h = (ply_header *)vx_malloc(sizeof *h);
  if (!h) return 0;
  vx_status s = VX_OK;
  int crlf, lf;
  size_t data;
  const int r = misread(p, n, h, &crlf, &lf, &data, &s, "", NULL);
  vx_free(h);
  return r;
}

vx_status vx_ply_rewrite(const unsigned char *p, size_t size, const char *what,
                         unsigned char **out, size_t *out_size, vx_error *err) {
  *out = NULL;
  *out_size = 0;
  ply_header *h = (ply_header *)vx_malloc(sizeof *h);
  if (!h) return vx_error_set(err, VX_ERR_NOMEM, "out of memory");
  vx_status s = VX_OK;
  int crlf, lf;
  size_t data;
  if (!misread(p, size, h, &crlf, &lf, &data, &s, what, err)) {
    vx_free(h);
    return s;
  }
  const size_t n = size - (size_t)crlf, head = data - (size_t)crlf;
  unsigned char *o = (unsigned char *)vx_malloc(n);
  if (!o) {
    vx_free(h);
    return vx_error_set(err, VX_ERR_NOMEM, "out of memory for a copy of %s", what);
  }
  memcpy(o, p, head - 1); /* the header up to the end of its last line's text */
  o[head - 1] = '\n';
  memcpy(o + head, p + data, size - data);
  const ply_elem *v = NULL;
  for (int i = 0; i < h->n && !v; i++)
    if (h->elem[i].props && h->elem[i].known) v = &h->elem[i];
  uint64_t r = 0, j = 1;
  int ok = !lf;
  if (lf && v && v->name_len == 6 && memcmp(v->name, "vertex", 6) == 0) {
    ok = 1;
    for (int q = 0; q < v->props; q++) ok &= !v->prop[q].list;
    r = v->bin_bytes;
    while (ok && j < v->count && head + (j + 1) * r <= n && o[head + j * r] == '\n') j++;
    ok &= j < v->count && head + (j + 1) * r <= n;
  }
  if (ok && lf) {
    unsigned char t[PLY_PROPS * 8];
    memcpy(t, o + head, r);
    memmove(o + head, o + head + j * r, r);
    memcpy(o + head + j * r, t, r);
    ok = trade_indices(o + head, n - head, h, 0, j) == 0;
  }
  vx_free(h);
  if (!ok) {
    vx_free(o);
    return vx_error_set(err, VX_ERR_FORMAT,
                        "cannot read %s: its binary PLY data starts with a line feed byte, which "
                        "assimp takes for the header's end; voxlod moves the first vertex to "
                        "avoid it, which needs a first 'vertex' element of fixed size and a "
                        "vertex not starting with that byte",
                        what);
  }
  *out = o;
  *out_size = n;
  return VX_OK;
}

/* ---- entry ----------------------------------------------------------------------------------- */

vx_status vx_precheck_ply(const unsigned char *p, size_t n, uint64_t size, const char *what,
                          vx_error *err) {
  ply_header *h = (ply_header *)vx_malloc(sizeof *h);
  if (!h) return VX_OK; /* the import meets the same shortage and says so */
  vx_status s = VX_OK;
  const int parsed = parse_header(p, n, h, &s, what, err);
  if (parsed > 0) s = check_counts(h, size, what, err);
  if (parsed > 0 && s == VX_OK)
    s = h->ascii == 1 ? check_ascii(p, n, size, h, what, err)
                      : check_binary(p, n, size, h, what, err);
  vx_free(h);
  return s;
}
