/* SPDX-License-Identifier: Apache-2.0 */
/* svo_edit.c - a test helper: rewrites a .svo file's transform or band with valid checksums, to
 * make trees that voxlod's own converter never writes (finite but extreme transforms, a band
 * under a voxel). Written from docs/SVO_FORMAT.md with zstd alone (no voxlod code): the header
 * frame is decoded, edited and framed again, the sections are copied as they are.
 * usage: svo_edit IN.svo OUT.svo [--origin X,Y,Z] [--scale S] [--band B]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr_f64(uint8_t *p, double d) {
  uint64_t v;
  memcpy(&v, &d, 8);
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int die(const char *m) {
  fprintf(stderr, "svo_edit: %s\n", m);
  return 1;
}

/* One zstd frame with a content checksum; its size, or 0. */
static size_t frame(const void *src, size_t n, uint8_t *dst, size_t cap) {
  ZSTD_CCtx *c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  size_t z = ZSTD_compress2(c, dst, cap, src, n);
  ZSTD_freeCCtx(c);
  return ZSTD_isError(z) ? 0 : z;
}

/* check32(bytes): the low 32 bits of XXH64(bytes, 0), read off a frame of those bytes (the
 * content checksum zstd writes at a frame's end). */
static uint32_t check32(const uint8_t *p, size_t n) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *tmp = (uint8_t *)malloc(cap);
  size_t z = tmp ? frame(p, n, tmp, cap) : 0;
  uint32_t c = z >= 4 ? rd32(tmp + z - 4) : 0;
  free(tmp);
  return c;
}

int main(int argc, char **argv) {
  if (argc < 3) return die("usage: svo_edit IN.svo OUT.svo [--origin X,Y,Z] [--scale S] [--band B]");
  FILE *f = fopen(argv[1], "rb");
  if (!f) return die("cannot open the input");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *in = (uint8_t *)malloc((size_t)size);
  if (!in || fread(in, 1, (size_t)size, f) != (size_t)size) return die("cannot read the input");
  fclose(f);
  if (size < 32 || memcmp(in, "VXLOD\0\r\n", 8) != 0) return die("not a .svo file");
  uint32_t hz = rd32(in + 16), hr = rd32(in + 20);
  if (32 + (long)hz > size || hr > 65536) return die("bad prologue");
  uint8_t hdr[65536];
  if (ZSTD_decompress(hdr, sizeof hdr, in + 32, hz) != hr) return die("bad header frame");
  for (int i = 3; i + 1 < argc; i += 2) {
    const char *o = argv[i], *v = argv[i + 1];
    if (strcmp(o, "--origin") == 0) {
      double x, y, z;
      if (sscanf(v, "%lf,%lf,%lf", &x, &y, &z) != 3) return die("bad --origin");
      wr_f64(hdr + 16, x);
      wr_f64(hdr + 24, y);
      wr_f64(hdr + 32, z);
    } else if (strcmp(o, "--scale") == 0) {
      wr_f64(hdr + 40, strtod(v, NULL));
    } else if (strcmp(o, "--band") == 0) {
      float b = (float)strtod(v, NULL);
      memcpy(hdr + 4, &b, 4);
    } else {
      return die("unknown option");
    }
  }
  uint8_t z[70000];
  size_t nz = frame(hdr, hr, z, sizeof z);
  if (!nz) return die("cannot frame the header");
  uint8_t pro[32];
  memcpy(pro, in, 32);
  wr32(pro + 16, (uint32_t)nz);
  wr32(pro + 24, check32(z, nz));
  FILE *o = fopen(argv[2], "wb");
  if (!o || fwrite(pro, 1, 32, o) != 32 || fwrite(z, 1, nz, o) != nz ||
      fwrite(in + 32 + hz, 1, (size_t)size - 32 - hz, o) != (size_t)size - 32 - hz || fclose(o))
    return die("cannot write the output");
  free(in);
  return 0;
}
