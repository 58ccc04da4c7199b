/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_text.c - vx_text_escape (svo/svo.h), which every library message goes through, on
 * arbitrary bytes and buffer sizes: the output is terminated within its buffer, holds no control
 * byte (C0, DEL) and no C1 control as UTF-8 (C2 80..9F), every byte >= 0x80 belongs to a
 * well-formed UTF-8 sequence (checked here by a decoder of its own), escaping again changes
 * nothing, and printable ASCII passes unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "svo/svo.h"

/* 1 when s is well-formed UTF-8 without C1 controls (an independent, table-free decoder). */
static int utf8_clean(const unsigned char *s) {
  while (*s) {
    unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                                     : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (n == 9) return 0;
    unsigned cp = n == 0 ? c : n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;
    for (unsigned i = 1; i <= n; i++) {
      if ((s[i] & 0xc0) != 0x80) return 0;
      cp = cp << 6 | (s[i] & 0x3f);
    }
    static const unsigned min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return 0;
    s += n + 1;
  }
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t cap = 1 + data[0] * 4u; /* 1 .. 1021 bytes */
  char *in = (char *)malloc(size);
  memcpy(in, data + 1, size - 1);
  in[size - 1] = 0;
  char *out = (char *)malloc(cap), *again = (char *)malloc(cap);
  vx_text_escape(out, cap, in);
  size_t n = strnlen(out, cap);
  if (n >= cap) abort();
  if (!utf8_clean((const unsigned char *)out)) abort();
  vx_text_escape(again, cap, out);
  if (strcmp(again, out) != 0) abort();
  int ascii = 1;
  for (const char *p = in; *p; p++) ascii &= *p >= 0x20 && *p < 0x7f;
  if (ascii && strlen(in) < cap && strcmp(in, out) != 0) abort();
  free(in);
  free(out);
  free(again);
  return 0;
}
