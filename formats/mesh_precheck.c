/* mesh_precheck.c - header counts against file size (mesh_precheck.h).
 *
 * Every byte looked at comes from an untrusted file: the parsers stop at the end of the bytes
 * given, every count is read with saturation and multiplied with saturation, and anything they do
 * not understand is left to the importer (VX_OK). They only refuse a header they have parsed whose
 * counts cannot fit in the file.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_precheck.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

static int ext_is(const char *ext, const char *want) {
  if (!ext) return 0;
  size_t i = 0;
  for (; want[i]; i++)
    if (lower((unsigned char)ext[i]) != want[i]) return 0;
  return ext[i] == 0;
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Decimal digits at p[*i..n) into *v (saturating); 0 when there is no digit. */
static int read_u64(const unsigned char *p, size_t n, size_t *i, uint64_t *v) {
  size_t k = *i;
  uint64_t x = 0;
  if (k >= n || !is_digit(p[k])) return 0;
  for (; k < n && is_digit(p[k]); k++) x = sat_add(sat_mul(x, 10), (uint64_t)(p[k] - '0'));
  *i = k;
  *v = x;
  return 1;
}

/* A name from the file, printable and at most 40 characters, for a message. */
static void printable(const unsigned char *s, size_t len, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < cap && i < 40; i++)
    out[k++] = s[i] > ' ' && s[i] < 127 ? (char)s[i] : '?';
  out[k] = 0;
}

/* ---- PLY ------------------------------------------------------------------------------------- */

typedef struct ply_elem {
  const unsigned char *name;
  size_t name_len;
  uint64_t count, props, bin_bytes; /* bin_bytes: one instance's fewest bytes in a binary file */
} ply_elem;

/* Totals of the elements closed so far, for both encodings (the format line may come late). */
typedef struct ply_sum {
  uint64_t need[2];     /* [0] binary, [1] ascii */
  ply_elem big[2];      /* the element needing the most, per encoding */
  uint64_t big_need[2];
  ply_elem empty;       /* an element without properties whose count passes the file's size */
} ply_sum;

/* Bytes of a PLY scalar type; 0 when unknown (it then costs nothing: lenient). */
static uint64_t ply_type_size(const unsigned char *w, size_t n) {
  static const struct {
    const char *name;
    uint64_t size;
  } types[] = {{"char", 1},   {"uchar", 1},   {"int8", 1},  {"uint8", 1},   {"short", 2},
               {"ushort", 2}, {"int16", 2},   {"uint16", 2}, {"int", 4},    {"uint", 4},
               {"int32", 4},  {"uint32", 4},  {"float", 4}, {"float32", 4}, {"double", 8},
               {"float64", 8}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (strlen(types[i].name) == n && memcmp(types[i].name, w, n) == 0) return types[i].size;
  return 0;
}

static void ply_close(const ply_elem *e, uint64_t size, ply_sum *s) {
  if (!e->name) return;
  for (int a = 0; a < 2; a++) {
    uint64_t per = a ? sat_mul(e->props, 2) : e->bin_bytes;
    uint64_t need = sat_mul(e->count, per);
    s->need[a] = sat_add(s->need[a], need);
    if (!s->big[a].name || need > s->big_need[a]) {
      s->big[a] = *e;
      s->big_need[a] = need;
    }
  }
  if (e->props == 0 && e->count > size && !s->empty.name) s->empty = *e;
}

#define W_IS(k, lit) (wl[k] == sizeof(lit) - 1 && memcmp(w[k], lit, sizeof(lit) - 1) == 0)

/* The elements of an ascii PLY with their properties, for the check of its list counts. */
#define PLY_ELEMS 16
#define PLY_PROPS 32
typedef struct ply_layout {
  int n, usable, lists;
  uint64_t count[PLY_ELEMS];
  int props[PLY_ELEMS];
  unsigned char list[PLY_ELEMS][PLY_PROPS];
} ply_layout;

static int is_blank(unsigned char c) { return c == ' ' || c == '\t'; }
/* assimp's line ends: a NUL or a form feed ends a line too */
static int is_eol(unsigned char c) { return c == '\n' || c == '\r' || c == '\0' || c == '\f'; }

/* An ascii PLY's list counts in the bytes looked at, one line per element instance (as assimp
 * reads them: blank lines skipped, a NUL, CR or form feed ends a line as a LF does): a count is the leading digits of its token (none: 0), and a list of c values
 * needs at least 2c bytes, so a count above half the bytes left in the file is refused (assimp
 * reserves it before reading); so is a negative count (assimp casts it to a size). */
static vx_status ply_ascii_lists(const unsigned char *p, size_t n, size_t pos, uint64_t size,
                                 const ply_layout *L, const char *what, vx_error *err) {
  for (int e = 0; e < L->n; e++) {
    for (uint64_t k = 0; k < L->count[e]; k++) {
      while (pos < n && (is_blank(p[pos]) || is_eol(p[pos]))) pos++; /* blank lines */
      if (pos >= n) return VX_OK;
      size_t end = pos;
      while (end < n && !is_eol(p[end])) end++;
      if (end >= n && n < size) return VX_OK; /* goes on past the bytes looked at */
      size_t i = pos;
      for (int q = 0; q < L->props[e]; q++) {
        while (i < end && is_blank(p[i])) i++;
        if (i >= end) break;
        if (L->list[e][q]) {
          const size_t at = i;
          uint64_t c = 0;
          if (p[i] == '-') { /* a signed count type: negative is no size, but assimp casts it */
            size_t j = i + 1;
            uint64_t neg = 0;
            if (read_u64(p, end, &j, &neg) && neg)
              return vx_error_set(err, VX_ERR_CORRUPT,
                                  "cannot read %s: a list in its ascii PLY data has a negative "
                                  "count (-%llu)",
                                  what, (unsigned long long)neg);
          } else if (!read_u64(p, end, &i, &c)) {
            c = 0; /* no leading digits: assimp reads an empty list */
          }
          uint64_t left = size > at ? size - at : 0;
          if (c > left / 2)
            return vx_error_set(err, VX_ERR_CORRUPT,
                                "cannot read %s: a list in its ascii PLY data claims %llu values, "
                                "but only %llu bytes are left in the file",
                                what, (unsigned long long)c, (unsigned long long)left);
          for (uint64_t v = 0; v < c && i < end; v++) { /* its values */
            while (i < end && is_blank(p[i])) i++;
            while (i < end && !is_blank(p[i])) i++;
          }
        }
        while (i < end && !is_blank(p[i])) i++; /* the rest of the token */
      }
      pos = end + 1;
    }
  }
  return VX_OK;
}

static vx_status check_ply(const unsigned char *p, size_t n, uint64_t size, const char *what,
                           vx_error *err) {
  size_t pos;
  if (n >= 4 && memcmp(p, "ply\n", 4) == 0) pos = 4;
  else if (n >= 5 && memcmp(p, "ply\r\n", 5) == 0) pos = 5;
  else return VX_OK;
  int ascii = -1; /* unknown until the format line */
  ply_sum sum;
  memset(&sum, 0, sizeof sum);
  ply_elem cur;
  memset(&cur, 0, sizeof cur);
  ply_layout lay;
  memset(&lay, 0, sizeof lay);
  lay.usable = 1;
  for (;;) {
    size_t end = pos;
    while (end < n && p[end] != '\n') end++;
    if (end >= n) return VX_OK; /* no end_header in the bytes looked at */
    size_t len = end > pos && p[end - 1] == '\r' ? end - 1 : end;
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
    if (nw == 0) continue;
    if (W_IS(0, "comment") || W_IS(0, "obj_info")) continue;
    if (nw > 5) return VX_OK;
    if (W_IS(0, "format")) {
      if (nw < 2) return VX_OK;
      if (W_IS(1, "ascii")) ascii = 1;
      else if (W_IS(1, "binary_little_endian") || W_IS(1, "binary_big_endian")) ascii = 0;
      else return VX_OK;
    } else if (W_IS(0, "element")) {
      if (nw != 3) return VX_OK;
      ply_close(&cur, size, &sum);
      memset(&cur, 0, sizeof cur);
      size_t k = 0;
      if (!read_u64(w[2], wl[2], &k, &cur.count) || k != wl[2]) return VX_OK;
      cur.name = w[1];
      cur.name_len = wl[1];
      if (lay.n < PLY_ELEMS) lay.count[lay.n++] = cur.count;
      else lay.usable = 0;
    } else if (W_IS(0, "property")) {
      if (!cur.name || nw < 3) return VX_OK;
      cur.props++;
      if (lay.n > 0 && lay.props[lay.n - 1] < PLY_PROPS) {
        lay.list[lay.n - 1][lay.props[lay.n - 1]++] = W_IS(1, "list");
        lay.lists += W_IS(1, "list");
      } else {
        lay.usable = 0;
      }
      if (W_IS(1, "list")) /* at least the item count, the list may be empty */
        cur.bin_bytes = sat_add(cur.bin_bytes, ply_type_size(w[2], wl[2]));
      else
        cur.bin_bytes = sat_add(cur.bin_bytes, ply_type_size(w[1], wl[1]));
    } else if (W_IS(0, "end_header")) {
      break;
    } else {
      return VX_OK; /* a line PLY does not define: the importer's to report */
    }
  }
  ply_close(&cur, size, &sum);
  if (ascii < 0) return VX_OK;
  const uint64_t data = size > pos ? size - pos : 0;
  char name[48];
  if (sum.empty.name) {
    printable(sum.empty.name, sum.empty.name_len, name, sizeof name);
    return vx_error_set(err, VX_ERR_CORRUPT,
                        "cannot read %s: its PLY header declares %llu '%s' elements without "
                        "properties, more than the file's %llu bytes",
                        what, (unsigned long long)sum.empty.count, name, (unsigned long long)size);
  }
  /* ascii: the last value needs no separator after it */
  uint64_t need = sum.need[ascii];
  if (ascii && need > 0) need--;
  if (need <= data)
    return ascii && lay.usable && lay.lists ? ply_ascii_lists(p, n, pos, size, &lay, what, err)
                                            : VX_OK;
  printable(sum.big[ascii].name, sum.big[ascii].name_len, name, sizeof name);
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its PLY header declares %llu '%s' elements (%llu bytes of "
                      "%s data at the least), but only %llu bytes follow the header",
                      what, (unsigned long long)sum.big[ascii].count, name,
                      (unsigned long long)need, ascii ? "ascii" : "binary",
                      (unsigned long long)data);
}

/* ---- binary STL ------------------------------------------------------------------------------ */

static vx_status check_stl(const unsigned char *p, size_t n, uint64_t size, const char *what,
                           vx_error *err) {
  if (size < 84 || n < 84) return VX_OK; /* too short to be binary: assimp decides */
  const uint64_t count = (uint64_t)p[80] | (uint64_t)p[81] << 8 | (uint64_t)p[82] << 16 |
                         (uint64_t)p[83] << 24;
  const uint64_t need = 84 + 50 * count; /* count < 2^32: no overflow */
  if (need <= size) return VX_OK;
  /* "solid" after blanks: an ascii STL, whose bytes 80..83 are text, not a count */
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
  if (n - i >= 5 && memcmp(p + i, "solid", 5) == 0) return VX_OK;
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its binary STL header declares %llu triangles (%llu "
                      "bytes), but the file has only %llu bytes",
                      what, (unsigned long long)count, (unsigned long long)need,
                      (unsigned long long)size);
}

/* ---- OFF ------------------------------------------------------------------------------------- */

/* Skips blanks, line ends and '#' comment lines, as assimp's OFF reader does between tokens. */
static void off_skip(const unsigned char *p, size_t n, size_t *i) {
  for (;;) {
    while (*i < n && (p[*i] == ' ' || p[*i] == '\t' || p[*i] == '\r' || p[*i] == '\n')) (*i)++;
    if (*i >= n || p[*i] != '#') return;
    while (*i < n && p[*i] != '\n') (*i)++;
  }
}

static vx_status check_off(const unsigned char *p, size_t n, uint64_t size, int named_off,
                           const char *what, vx_error *err) {
  size_t i = 0;
  off_skip(p, n, &i);
  /* [ST][C][N][4][n]OFF; the keyword is optional in a file named .off */
  size_t k = i;
  int dim_given = 0;
  if (n - k >= 2 && p[k] == 'S' && p[k + 1] == 'T') k += 2;
  if (k < n && p[k] == 'C') k++;
  if (k < n && p[k] == 'N') k++;
  if (k < n && p[k] == '4') k++;
  if (k < n && p[k] == 'n') {
    dim_given = 1;
    k++;
  }
  int keyword = n - k >= 3 && memcmp(p + k, "OFF", 3) == 0 &&
                (n - k == 3 || p[k + 3] == ' ' || p[k + 3] == '\t' || p[k + 3] == '\r' ||
                 p[k + 3] == '\n' || p[k + 3] == '#');
  if (!keyword && !named_off) return VX_OK;
  uint64_t dims = 3, nv = 0, nf = 0;
  if (keyword) {
    i = k + 3;
    off_skip(p, n, &i);
    if (dim_given) {
      if (!read_u64(p, n, &i, &dims)) return VX_OK;
      off_skip(p, n, &i);
    }
  }
  if (!read_u64(p, n, &i, &nv)) return VX_OK;
  off_skip(p, n, &i);
  if (!read_u64(p, n, &i, &nf)) return VX_OK;
  if (i >= n && n < size) return VX_OK; /* the count may go on past the bytes looked at */
  if (dims > 3) return VX_OK;           /* assimp refuses those */
  const uint64_t data = size > i ? size - i : 0;
  uint64_t need = sat_add(sat_mul(nv, dims ? 2 * dims : 1), sat_mul(nf, 2));
  if (need > 0) need--; /* the last line needs no line end */
  if (need <= data) return VX_OK;
  return vx_error_set(err, VX_ERR_CORRUPT,
                      "cannot read %s: its OFF header declares %llu vertices and %llu faces "
                      "(%llu bytes at the least), but only %llu bytes follow the counts",
                      what, (unsigned long long)nv, (unsigned long long)nf,
                      (unsigned long long)need, (unsigned long long)data);
}

/* ---- entry points ---------------------------------------------------------------------------- */

vx_status vx_mesh_precheck(const unsigned char *head, size_t n, uint64_t size, const char *ext,
                           const char *what, vx_error *err) {
  if (!head) return VX_OK;
  if (n > size) n = (size_t)size;
  if (n > VX_MESH_PRECHECK_HEAD) n = VX_MESH_PRECHECK_HEAD;
  if (!what) what = "the mesh data";
  vx_status s = check_ply(head, n, size, what, err);
  if (s == VX_OK && ext_is(ext, "stl")) s = check_stl(head, n, size, what, err);
  if (s == VX_OK) s = check_off(head, n, size, ext_is(ext, "off"), what, err);
  return s;
}

const char *vx_mesh_path_ext(const char *path) {
  if (!path) return NULL;
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  return dot ? dot + 1 : NULL;
}

vx_status vx_mesh_precheck_file(const char *path, vx_error *err) {
  if (!path) return VX_OK;
  /* Non-blocking: a FIFO must not stall the check (the import refuses it with a message). */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return VX_OK;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    close(fd);
    return VX_OK;
  }
  unsigned char *head = (unsigned char *)vx_malloc(VX_MESH_PRECHECK_HEAD);
  if (!head) {
    close(fd);
    return VX_OK; /* the import will meet the same shortage and say so */
  }
  size_t got = 0;
  while (got < VX_MESH_PRECHECK_HEAD) {
    ssize_t r = read(fd, head + got, VX_MESH_PRECHECK_HEAD - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  char what[600];
  snprintf(what, sizeof what, "'%s'", path);
  vx_status s = vx_mesh_precheck(head, got, (uint64_t)st.st_size, vx_mesh_path_ext(path), what,
                                 err);
  vx_free(head);
  return s;
}
