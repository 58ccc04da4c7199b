/* SPDX-License-Identifier: Apache-2.0 */
/* protocol.c - the page's messages (protocol.h): a strict tokenizer over a bounded byte string.
 *
 * Every byte is checked before it is used: the length first, then the alphabet (printable
 * ASCII), then each token against the grammar of its key. Numbers are matched against a decimal
 * grammar before strtod sees them, so what strtod would also accept ("nan", "inf", "0x1p4",
 * leading spaces) is refused, and the value is checked finite and in range afterwards. Nothing
 * is written to *m's fields unless the whole message is good.
 */
#include "viewer/protocol.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(char *why, size_t n, const char *fmt, ...) {
  if (why && n) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* A token: a span of the message. */
typedef struct span {
  const char *p;
  size_t n;
} span;

static int span_is(span s, const char *word) {
  size_t k = strlen(word);
  return s.n == k && memcmp(s.p, word, k) == 0;
}

/* Prints a token for a message, shortened and kept printable (the message is ASCII already). */
static const char *show(span s, char *buf, size_t n) {
  size_t k = s.n < n - 4 ? s.n : n - 4;
  memcpy(buf, s.p, k);
  if (k < s.n) {
    memcpy(buf + k, "...", 3);
    k += 3;
  }
  buf[k] = 0;
  return buf;
}

/* A decimal number: -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)? of at most 40 characters. */
static int parse_number(span s, double *out) {
  if (s.n == 0 || s.n > 40) return -1;
  size_t i = 0;
  if (s.p[i] == '-') i++;
  size_t d0 = i;
  while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9') i++;
  if (i == d0) return -1;
  if (i < s.n && s.p[i] == '.') {
    size_t f0 = ++i;
    while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9') i++;
    if (i == f0) return -1;
  }
  if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
    i++;
    if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) i++;
    size_t e0 = i;
    while (i < s.n && s.p[i] >= '0' && s.p[i] <= '9') i++;
    if (i == e0 || i - e0 > 4) return -1;
  }
  if (i != s.n) return -1;
  char buf[48];
  memcpy(buf, s.p, s.n);
  buf[s.n] = 0;
  double v = strtod(buf, NULL);
  if (!isfinite(v)) return -1;
  *out = v;
  return 0;
}

/* A whole number 0 .. 4294967295 written with at most 10 digits, no sign. */
static int parse_u32(span s, uint32_t *out) {
  if (s.n == 0 || s.n > 10) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < s.n; i++) {
    if (s.p[i] < '0' || s.p[i] > '9') return -1;
    v = v * 10 + (uint64_t)(s.p[i] - '0');
  }
  if (v > 4294967295u) return -1;
  *out = (uint32_t)v;
  return 0;
}

/* "x,y,z", each a number within +-VW_COORD_MAX. */
static int parse_vec3(span s, double out[3]) {
  double v[3];
  size_t i = 0;
  for (int k = 0; k < 3; k++) {
    size_t j = i;
    while (j < s.n && s.p[j] != ',') j++;
    if ((k < 2) != (j < s.n)) return -1; /* two commas, exactly */
    span t = {s.p + i, j - i};
    if (parse_number(t, &v[k]) || fabs(v[k]) > VW_COORD_MAX) return -1;
    i = j + 1;
  }
  memcpy(out, v, sizeof v);
  return 0;
}

/* Which command, and which fields it takes. */
static const struct {
  const char *name;
  vw_cmd cmd;
  unsigned fields;
} commands[] = {
    {"view", VW_CMD_VIEW,
     VW_HAS_EYE | VW_HAS_TARGET | VW_HAS_UP | VW_HAS_FOV | VW_HAS_W | VW_HAS_H | VW_HAS_LOD |
         VW_HAS_LODSCALE | VW_HAS_SHADE | VW_HAS_QUALITY | VW_HAS_MOVING | VW_HAS_SEQ},
    {"png", VW_CMD_PNG, 0},
    {"ack", VW_CMD_ACK, VW_HAS_FRAME},
    {"ping", VW_CMD_PING, 0},
};

static const struct {
  const char *key;
  unsigned bit;
} keys[] = {
    {"eye", VW_HAS_EYE},     {"target", VW_HAS_TARGET}, {"up", VW_HAS_UP},
    {"fov", VW_HAS_FOV},     {"w", VW_HAS_W},           {"h", VW_HAS_H},
    {"lod", VW_HAS_LOD},     {"lodscale", VW_HAS_LODSCALE}, {"shade", VW_HAS_SHADE},
    {"q", VW_HAS_QUALITY},   {"moving", VW_HAS_MOVING}, {"seq", VW_HAS_SEQ},
    {"frame", VW_HAS_FRAME},
};

/* Parses the value of field `bit` into m; 0 or -1 with the reason. */
static int parse_field(unsigned bit, span key, span v, int max_level, vw_msg *m, char *why,
                       size_t why_n) {
  char kb[24], vb[48];
  uint32_t u;
  double d;
  switch (bit) {
  case VW_HAS_EYE:
  case VW_HAS_TARGET:
  case VW_HAS_UP:
    if (parse_vec3(v, bit == VW_HAS_EYE ? m->eye : bit == VW_HAS_TARGET ? m->target : m->up))
      return fail(why, why_n, "%s: '%s' is not x,y,z (finite numbers within 1e30)",
                  show(key, kb, sizeof kb), show(v, vb, sizeof vb));
    return 0;
  case VW_HAS_FOV:
    if (parse_number(v, &d) || !(d >= 1.0 && d <= 179.0))
      return fail(why, why_n, "fov: '%s' is not a number of degrees from 1 to 179",
                  show(v, vb, sizeof vb));
    m->fov = d;
    return 0;
  case VW_HAS_W:
  case VW_HAS_H:
    if (parse_u32(v, &u) || u < 1 || u > VW_SIZE_ASK_MAX)
      return fail(why, why_n, "%s: '%s' is not a pixel count from 1 to %u",
                  show(key, kb, sizeof kb), show(v, vb, sizeof vb), VW_SIZE_ASK_MAX);
    if (bit == VW_HAS_W) m->width = u;
    else m->height = u;
    return 0;
  case VW_HAS_LOD:
    if (span_is(v, "finest")) m->lod = VW_LOD_FINEST;
    else if (span_is(v, "auto")) m->lod = VW_LOD_AUTO;
    else if (!parse_u32(v, &u) && (int64_t)u <= (int64_t)max_level) m->lod = (int)u;
    else
      return fail(why, why_n, "lod: '%s' is not finest, auto or a level from 0 to %d",
                  show(v, vb, sizeof vb), max_level);
    return 0;
  case VW_HAS_LODSCALE:
    if (parse_number(v, &d) || !(d >= 0.01 && d <= 1000.0))
      return fail(why, why_n, "lodscale: '%s' is not a number of pixels from 0.01 to 1000",
                  show(v, vb, sizeof vb));
    m->lod_scale = d;
    return 0;
  case VW_HAS_SHADE:
    if (span_is(v, "smooth")) m->shade = 0;
    else if (span_is(v, "blocks")) m->shade = 1;
    else if (span_is(v, "normals")) m->shade = 2;
    else if (span_is(v, "albedo")) m->shade = 3;
    else
      return fail(why, why_n, "shade: '%s' is not smooth, blocks, normals or albedo",
                  show(v, vb, sizeof vb));
    return 0;
  case VW_HAS_QUALITY:
    if (parse_u32(v, &u) || u < 1 || u > 100)
      return fail(why, why_n, "q: '%s' is not a JPEG quality from 1 to 100",
                  show(v, vb, sizeof vb));
    m->quality = (int)u;
    return 0;
  case VW_HAS_MOVING:
    if (span_is(v, "0")) m->moving = 0;
    else if (span_is(v, "1")) m->moving = 1;
    else return fail(why, why_n, "moving: '%s' is not 0 or 1", show(v, vb, sizeof vb));
    return 0;
  case VW_HAS_SEQ:
  case VW_HAS_FRAME:
    if (parse_u32(v, &u))
      return fail(why, why_n, "%s: '%s' is not a whole number below 2^32",
                  show(key, kb, sizeof kb), show(v, vb, sizeof vb));
    if (bit == VW_HAS_SEQ) m->seq = u;
    else m->frame = u;
    return 0;
  }
  return fail(why, why_n, "internal: unhandled field");
}

int vw_msg_parse(const char *data, size_t n, int max_level, vw_msg *out, char *why,
                 size_t why_n) {
  if (why && why_n) why[0] = 0;
  if (!data || n == 0) return fail(why, why_n, "empty message");
  if (n > VW_MSG_MAX)
    return fail(why, why_n, "message of %zu bytes (at most %d)", n, VW_MSG_MAX);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)data[i] < 0x20 || (unsigned char)data[i] > 0x7e)
      return fail(why, why_n, "byte %zu (0x%02x) is not printable ASCII", i,
                  (unsigned)(unsigned char)data[i]);
  vw_msg m;
  memset(&m, 0, sizeof m);
  /* The command word. */
  size_t i = 0;
  while (i < n && data[i] != ' ') i++;
  span word = {data, i};
  char wb[24];
  unsigned allowed = 0;
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
    if (span_is(word, commands[c].name)) {
      m.cmd = commands[c].cmd;
      allowed = commands[c].fields;
    }
  if (!m.cmd)
    return fail(why, why_n, "unknown command '%s' (view, png, ack, ping)", show(word, wb, sizeof wb));
  /* The fields: " key=value" each. */
  while (i < n) {
    i++; /* the space */
    size_t t0 = i;
    while (i < n && data[i] != ' ') i++;
    span tok = {data + t0, i - t0};
    if (tok.n == 0) return fail(why, why_n, "empty field (fields are separated by one space)");
    const char *eq = (const char *)memchr(tok.p, '=', tok.n);
    char tb[48];
    if (!eq) return fail(why, why_n, "field '%s' is not key=value", show(tok, tb, sizeof tb));
    span key = {tok.p, (size_t)(eq - tok.p)};
    span val = {eq + 1, tok.n - key.n - 1};
    unsigned bit = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (span_is(key, keys[k].key)) bit = keys[k].bit;
    if (!bit || !(allowed & bit))
      return fail(why, why_n, "%s takes no field '%s'", show(word, wb, sizeof wb),
                  show(key, tb, sizeof tb));
    if (m.has & bit) return fail(why, why_n, "field '%s' given twice", show(key, tb, sizeof tb));
    if (parse_field(bit, key, val, max_level, &m, why, why_n)) return -1;
    m.has |= bit;
  }
  if (m.cmd == VW_CMD_ACK && !(m.has & VW_HAS_FRAME))
    return fail(why, why_n, "ack needs frame=N");
  *out = m;
  return 0;
}

static double dot3(const double a[3], const double b[3]) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

int vw_camera_check(const double eye[3], const double target[3], const double up[3], double fov,
                    char *why, size_t why_n) {
  for (int k = 0; k < 3; k++)
    if (!isfinite(eye[k]) || !isfinite(target[k]) || !isfinite(up[k]) ||
        fabs(eye[k]) > VW_COORD_MAX || fabs(target[k]) > VW_COORD_MAX ||
        fabs(up[k]) > VW_COORD_MAX)
      return fail(why, why_n, "camera coordinates must be finite numbers within 1e30");
  if (!(fov >= 1.0 && fov <= 179.0))
    return fail(why, why_n, "field of view %g outside 1 .. 179 degrees", fov);
  /* Relative tests: the model may be 1e-10 or 1e20 units across. */
  double f[3] = {target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]};
  double scale = fabs(eye[0]) + fabs(eye[1]) + fabs(eye[2]) + fabs(target[0]) + fabs(target[1]) +
                 fabs(target[2]);
  double fl = sqrt(dot3(f, f)), ul = sqrt(dot3(up, up));
  if (!(fl > 1e-12 * scale) || !(fl > 0.0))
    return fail(why, why_n, "camera: the eye is at the target");
  if (!(ul > 0.0)) return fail(why, why_n, "camera: the up vector is zero");
  double c = dot3(f, up) / (fl * ul);
  if (!(fabs(c) < 0.999999))
    return fail(why, why_n, "camera: the up vector lies along the view direction");
  return 0;
}

void vw_clamp_size(uint32_t w, uint32_t h, uint32_t max_w, uint32_t max_h, uint32_t *out_w,
                   uint32_t *out_h) {
  if (w < 1) w = 1;
  if (h < 1) h = 1;
  if (max_w < 1) max_w = 1;
  if (max_h < 1) max_h = 1;
  double s = 1.0;
  if (w > max_w) s = (double)max_w / w;
  if (h > max_h && (double)max_h / h < s) s = (double)max_h / h;
  double fw = floor(w * s + 0.5), fh = floor(h * s + 0.5);
  *out_w = fw < 1.0 ? 1u : fw > max_w ? max_w : (uint32_t)fw;
  *out_h = fh < 1.0 ? 1u : fh > max_h ? max_h : (uint32_t)fh;
}

size_t vw_json_string(char *dst, size_t n, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (n < 3) {
    if (n) dst[0] = 0;
    return 0;
  }
  size_t k = 0;
  dst[k++] = '"';
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    char e[7];
    size_t len = 0;
    if (*p == '"' || *p == '\\') {
      e[0] = '\\';
      e[1] = (char)*p;
      len = 2;
    } else if (*p < 0x20 || *p == 0x7f) {
      memcpy(e, "\\u00", 4);
      e[4] = hex[*p >> 4];
      e[5] = hex[*p & 15];
      len = 6;
    } else if (*p >= 0x80) {
      /* Bytes of a UTF-8 sequence pass as they are when the sequence is whole; a stray byte
       * becomes U+FFFD, so the output is always valid UTF-8 JSON. */
      int need = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
      int ok = need > 0;
      for (int j = 1; ok && j <= need; j++) ok = (p[j] & 0xc0) == 0x80;
      if (ok) {
        len = (size_t)need + 1;
        memcpy(e, p, len);
        p += need;
      } else {
        memcpy(e, "\\ufffd", 6);
        len = 6;
      }
    } else {
      e[0] = (char)*p;
      len = 1;
    }
    if (k + len + 2 > n) break; /* room for the closing quote and NUL */
    memcpy(dst + k, e, len);
    k += len;
  }
  dst[k++] = '"';
  dst[k] = 0;
  return k;
}

int vw_host_parse(const char *value, char *name, size_t n) {
  if (!value || !name || n == 0) return -1;
  name[0] = 0;
  const char *p = value, *h0, *h1;
  if (*p == '[') {
    h0 = ++p;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F') ||
           *p == ':' || *p == '.')
      p++;
    if (*p != ']') return -1;
    h1 = p++;
    char tmp[64];
    struct in6_addr a6;
    size_t k = (size_t)(h1 - h0);
    if (k == 0 || k >= sizeof tmp) return -1;
    memcpy(tmp, h0, k);
    tmp[k] = 0;
    if (inet_pton(AF_INET6, tmp, &a6) != 1) return -1;
  } else {
    h0 = p;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
           *p == '-' || *p == '.' || *p == '_')
      p++;
    h1 = p;
    if (h1 == h0) return -1;
  }
  if (*p == ':') {
    p++;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9' && digits <= 5) {
      p++;
      digits++;
    }
    if (digits > 5) return -1;
  }
  if (*p) return -1; /* anything after the host and port */
  size_t k = (size_t)(h1 - h0);
  if (k >= n) return -1;
  memcpy(name, h0, k);
  name[k] = 0;
  return 0;
}

int vw_host_is_loopback(const char *name) {
  if (!name) return 0;
  const char *l = "localhost";
  size_t i = 0;
  while (name[i] && l[i] && (name[i] | 0x20) == l[i]) i++;
  if (!name[i] && !l[i]) return 1;
  struct in_addr a4;
  struct in6_addr a6;
  /* inet_pton takes only four decimal parts (no "127.1", no octal or hex). */
  if (inet_pton(AF_INET, name, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, name, &a6) == 1) return memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
  return 0;
}

char *vw_text_escape(char *dst, size_t n, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (!dst || n == 0) return dst;
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    char e[4];
    size_t len = 1;
    e[0] = (char)*p;
    if (*p < 0x20 || *p == 0x7f) {
      e[0] = '\\';
      e[1] = 'x';
      e[2] = hex[*p >> 4];
      e[3] = hex[*p & 15];
      len = 4;
    } else if (*p == '\\') {
      e[1] = '\\';
      len = 2;
    }
    if (k + len + 1 > n) break;
    memcpy(dst + k, e, len);
    k += len;
  }
  dst[k] = 0;
  return dst;
}
