/* SPDX-License-Identifier: Apache-2.0 */
/* jpeg_join.c - strips of one frame spliced into one JPEG with restart markers (jpeg_join.h says
 * why that is the frame). Every strip is parsed and checked before a byte moves: a header made
 * of the segments libjpeg writes (APPn, COM, DQT, DHT, one baseline or extended sequential SOF,
 * one interleaved SOS, no DRI), header bytes equal to the first strip's but for the height,
 * entropy-coded data in which every 0xFF is stuffed (no marker inside) and EOI at the end. The
 * strips come from this program's own encoder, but a surprise (another libjpeg build, a flag set
 * elsewhere) must give a refusal, never a corrupt image: the caller then encodes in one piece. */
#include "viewer/jpeg_join.h"

#include <stdio.h>
#include <string.h>

typedef struct part {
  size_t sof;            /* offset of the SOF marker */
  size_t sos;            /* offset of the SOS marker */
  size_t data;           /* offset of the entropy-coded data (just after the SOS segment) */
  uint32_t width, height;
  uint32_t mcu_w, mcu_h; /* pixels per MCU */
} part;

static size_t fail(char *why, size_t why_n, unsigned k, const char *what) {
  if (why_n) snprintf(why, why_n, "JPEG strip %u: %s", k, what);
  return 0;
}

static int bad(char *why, size_t why_n, unsigned k, const char *what) {
  fail(why, why_n, k, what);
  return -1;
}

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

/* Parses strip k (p, n bytes) into *pt; 0, or -1 with why. */
static int parse(const uint8_t *p, size_t n, unsigned k, part *pt, char *why, size_t why_n) {
  if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return bad(why, why_n, k, "no SOI");
  size_t pos = 2;
  unsigned nf = 0;
  int have_sof = 0;
  for (;;) {
    if (n - pos < 4) return bad(why, why_n, k, "header cut short");
    if (p[pos] != 0xFF) return bad(why, why_n, k, "no marker where one belongs");
    unsigned m = p[pos + 1];
    size_t len = be16(p + pos + 2);
    if (len < 2 || len > n - pos - 2) return bad(why, why_n, k, "segment overruns");
    const uint8_t *s = p + pos + 4; /* the segment's body, len - 2 bytes */
    if (m == 0xC0 || m == 0xC1) {
      if (have_sof) return bad(why, why_n, k, "two frame headers");
      if (len < 8) return bad(why, why_n, k, "short frame header");
      nf = s[5];
      if (s[0] != 8 || nf < 1 || nf > 4 || len != 8 + 3 * (size_t)nf)
        return bad(why, why_n, k, "unexpected frame header");
      pt->height = be16(s + 1);
      pt->width = be16(s + 3);
      if (pt->height == 0 || pt->width == 0)
        return bad(why, why_n, k, "frame header without a size");
      unsigned hmax = 1, vmax = 1;
      for (unsigned c = 0; c < nf; c++) {
        unsigned h = s[6 + 3 * c + 1] >> 4, v = s[6 + 3 * c + 1] & 15;
        if (h < 1 || h > 4 || v < 1 || v > 4)
          return bad(why, why_n, k, "bad sampling factors");
        if (h > hmax) hmax = h;
        if (v > vmax) vmax = v;
      }
      /* One component: its scan is not interleaved and an MCU is one block. */
      pt->mcu_w = nf == 1 ? 8 : 8 * hmax;
      pt->mcu_h = nf == 1 ? 8 : 8 * vmax;
      pt->sof = pos;
      have_sof = 1;
    } else if (m == 0xDA) {
      if (!have_sof) return bad(why, why_n, k, "scan before the frame header");
      if (len < 6 || len != 6 + 2 * (size_t)s[0] || s[0] != nf)
        return bad(why, why_n, k, "scan does not hold every component");
      pt->sos = pos;
      pt->data = pos + 2 + len;
      break;
    } else if (m == 0xDD) {
      return bad(why, why_n, k, "already has restart markers");
    } else if (!(m == 0xDB || m == 0xC4 || m == 0xFE || (m >= 0xE0 && m <= 0xEF))) {
      return bad(why, why_n, k, "a marker this join does not know");
    }
    pos += 2 + len;
  }
  if (n - pt->data < 2 || p[n - 2] != 0xFF || p[n - 1] != 0xD9)
    return bad(why, why_n, k, "no EOI right after the scan");
  /* Inside entropy-coded data a 0xFF byte is always followed by a stuffed 0x00; anything else is
   * a marker (a restart, or the end) that must not be carried into the middle of the frame. */
  const uint8_t *q = p + pt->data, *end = p + n - 2;
  while (q < end && (q = (const uint8_t *)memchr(q, 0xFF, (size_t)(end - q))) != NULL) {
    if (end - q < 2 || q[1] != 0x00) return bad(why, why_n, k, "a marker inside the scan");
    q += 2;
  }
  return 0;
}

size_t vw_jpeg_join(uint8_t *buf, size_t at, const size_t *off, const size_t *len, unsigned n,
                    char *why, size_t why_n) {
  if (why_n) why[0] = 0;
  if (!buf || !off || !len || n < 1 || n > VW_JPEG_JOIN_MAX)
    return fail(why, why_n, 0, "bad arguments");
  if (off[0] < at || off[0] - at < VW_JPEG_JOIN_EXTRA)
    return fail(why, why_n, 0, "no room in front of the first strip");
  for (unsigned k = 0; k + 1 < n; k++)
    if (off[k + 1] < off[k] || off[k + 1] - off[k] < len[k])
      return fail(why, why_n, k, "strips overlap or are out of order");

  /* Check everything before anything moves. */
  part p0, pk;
  size_t data[VW_JPEG_JOIN_MAX];
  uint64_t total_h = 0;
  if (parse(buf + off[0], len[0], 0, &p0, why, why_n)) return 0;
  data[0] = p0.data;
  total_h = p0.height;
  for (unsigned k = 1; k < n; k++) {
    const uint8_t *a = buf + off[0], *b = buf + off[k];
    if (parse(b, len[k], k, &pk, why, why_n)) return 0;
    /* The same header byte for byte, the SOF's height (2 bytes at sof + 5) aside. */
    size_t hy = p0.sof + 5;
    if (pk.data != p0.data || pk.sof != p0.sof || pk.width != p0.width ||
        memcmp(a, b, hy) != 0 || memcmp(a + hy + 2, b + hy + 2, p0.data - hy - 2) != 0)
      return fail(why, why_n, k, "its header differs from the first strip's");
    if (k + 1 < n ? pk.height != p0.height : pk.height > p0.height)
      return fail(why, why_n, k, "its height does not match the first strip's");
    data[k] = pk.data;
    total_h += pk.height;
  }
  if (n == 1) {
    memmove(buf + at, buf + off[0], len[0]);
    return len[0];
  }
  if (p0.height % p0.mcu_h != 0)
    return fail(why, why_n, 0, "its height is not a multiple of the MCU height");
  if (total_h > 65535) return fail(why, why_n, 0, "the frame is taller than a JPEG allows");
  uint64_t ri = (uint64_t)((p0.width + p0.mcu_w - 1) / p0.mcu_w) * (p0.height / p0.mcu_h);
  if (ri > 65535) return fail(why, why_n, 0, "more MCUs than a restart interval holds");

  /* Write. Every destination lies at or before its source, and before the next strip's bytes
   * (at + 6 <= off[0], and each strip gives up at least its header and EOI), so memmove
   * suffices. */
  size_t o = at;
  memmove(buf + o, buf + off[0], p0.sos);
  buf[o + p0.sof + 5] = (uint8_t)(total_h >> 8);
  buf[o + p0.sof + 6] = (uint8_t)(total_h & 0xff);
  o += p0.sos;
  const uint8_t dri[VW_JPEG_JOIN_EXTRA] = {0xFF, 0xDD, 0x00, 0x04, (uint8_t)(ri >> 8),
                                           (uint8_t)(ri & 0xff)};
  memcpy(buf + o, dri, sizeof dri);
  o += sizeof dri;
  size_t k0 = len[0] - 2 - p0.sos; /* the SOS segment and the first strip's scan */
  memmove(buf + o, buf + off[0] + p0.sos, k0);
  o += k0;
  for (unsigned k = 1; k < n; k++) {
    buf[o++] = 0xFF;
    buf[o++] = (uint8_t)(0xD0 + ((k - 1) & 7));
    size_t m = len[k] - 2 - data[k];
    memmove(buf + o, buf + off[k] + data[k], m);
    o += m;
  }
  buf[o++] = 0xFF;
  buf[o++] = 0xD9;
  return o - at;
}
