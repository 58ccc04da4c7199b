/* SPDX-License-Identifier: Apache-2.0 */
/* texture_jpeg.c - JPEG textures decoded by libjpeg-turbo (its TurboJPEG 2.x API) for
 * vx_texture_decode (texture.h). The only file that includes turbojpeg.h in the library.
 *
 * The header is read first and its size checked against the same bounds as every texture
 * (vx_texture_check_size) before anything is allocated; the texels are decoded straight into the
 * texture's own buffer. A JPEG that libjpeg-turbo finds damaged is refused, warnings included
 * (TJFLAG_STOPONWARNING): libjpeg would otherwise finish a truncated or corrupt scan with grey
 * blocks and report success with a warning, and a texture that is half grey is worse than a
 * clear message naming the file (the material's own colour is used then). Progressive files are
 * held to libjpeg-turbo's bound on scans (TJFLAG_LIMITSCANS), which keeps a file of a few
 * kilobytes from costing minutes of decoding.
 */
#include "formats/texture.h"
#include "sys/system.h"

#include <string.h>
#include <turbojpeg.h>

/* x * y / 255, rounded (an inverted CMYK sample times its inverted K) */
static uint32_t mul255(uint32_t x, uint32_t y) {
  uint32_t t = x * y + 128;
  return (t + (t >> 8)) >> 8;
}

static vx_status refuse(tjhandle tj, vx_error *err) {
  vx_status st = vx_error_set(err, VX_ERR_FORMAT, "damaged image (%s)", tjGetErrorStr2(tj));
  tjDestroy(tj);
  return st;
}

vx_status vx_texture_decode_jpeg(const uint8_t *data, size_t size, uint64_t mem_avail,
                                 vx_texture *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  tjhandle tj = tjInitDecompress();
  if (!tj) return vx_error_set(err, VX_ERR_NOMEM, "cannot start the JPEG decoder");
  int w = 0, h = 0, subsamp = 0, cs = 0;
  if (tjDecompressHeader3(tj, data, (unsigned long)size, &w, &h, &subsamp, &cs) != 0)
    return refuse(tj, err);
  vx_status st = vx_texture_check_size((uint64_t)w, (uint64_t)h, size, mem_avail, err);
  if (st != VX_OK) {
    tjDestroy(tj);
    return st;
  }
  const uint64_t texels = (uint64_t)w * (uint64_t)h;
  uint8_t *px = (uint8_t *)vx_malloc((size_t)texels * 4);
  if (!px) {
    tjDestroy(tj);
    return vx_error_set(err, VX_ERR_NOMEM, "%dx%d texels: out of memory", w, h);
  }
  /* libjpeg converts no CMYK to RGB: CMYK and YCCK files come out as CMYK (YCCK converted), with
   * the inverted samples Adobe's files hold, made RGB here */
  const int cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
  if (tjDecompress2(tj, data, (unsigned long)size, px, w, w * 4, h, cmyk ? TJPF_CMYK : TJPF_RGBA,
                    TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    vx_free(px);
    return refuse(tj, err);
  }
  tjDestroy(tj);
  /* packed RGBA8 is r | g << 8 | b << 16 | a << 24 (the bytes r, g, b, a on a little-endian
   * host), made in place: each texel's 4 bytes are read before its word is written */
  uint32_t *rgba = (uint32_t *)(void *)px;
  for (uint64_t i = 0; i < texels; i++) {
    const uint8_t *p = px + 4 * i;
    uint32_t r = p[0], g = p[1], b = p[2], a = p[3];
    if (cmyk) r = mul255(r, a), g = mul255(g, a), b = mul255(b, a), a = 255;
    rgba[i] = r | g << 8 | b << 16 | a << 24;
  }
  out->width = (uint32_t)w;
  out->height = (uint32_t)h;
  out->rgba = rgba;
  return VX_OK;
}
