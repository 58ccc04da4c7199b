/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_color_import.c - colour in the mesh import (svo/soup.h vx_soup_color), with files
 * the test writes itself: images by stb_image_write (a writer that shares no code with the
 * decoder), OBJ/MTL and PLY text, a GLB assembled byte by byte.
 *
 * Good input: an OBJ+MTL with a map_Kd PNG (texels exact, the UV orientation checked by sampling a
 * 2x2 texture at a known uv with a nearest-texel lookup written here), path variants (case, '\',
 * %20), a vertex-coloured PLY, material-only OBJ colours, a GLB with an embedded PNG and glTF
 * alpha modes, OBJ cut-outs (map_d, RGBA map_Kd) and opacity, no colour for a plain mesh, UV
 * transforms (GLB KHR_texture_transform against the extension computed here; OBJ -o/-s and
 * COLLADA's, which are not applied).
 * Bad input: a PNG header claiming 60000x60000, truncated PNG/JPEG/TGA, a texture path that is a
 * directory, a FIFO, /dev/zero, '../../etc/passwd' or a 300-character name, UVs NaN and 1e30,
 * 10^6 materials: warnings (or a clear error), never a failed conversion or a hang.
 * Every case goes through vx_soup_import and vx_soup_import_isolated, whose results must be the
 * same bit for bit. (The record parser, the material table's cap, raw embedded texels and the
 * vertex colours of meshes from arrays: test_formats_color_tables.c.)
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_import.h"
#include "lib/internal.h"
#include "svo/color.h"

#include "check.h"

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "stb_write.h"

#include "asan_null_alloc.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char path[2][1200];
  static int k;
  k ^= 1;
  snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
  return path[k];
}

static const char *write_file(const char *name, const void *data, size_t n) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  if (!f) CHECK_FATAL("cannot write %s", path);
  if (n) fwrite(data, 1, n, f);
  fclose(f);
  return path;
}

static const char *write_text(const char *name, const char *text) {
  return write_file(name, text, strlen(text));
}

/* An RGBA PNG of w x h texels (rows top first). */
static void write_png(const char *name, int w, int h, int comp, const uint8_t *px) {
  if (!stbi_write_png(tmp_path(name), w, h, comp, px, w * comp)) CHECK_FATAL("stbi_write_png");
}

static uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a) {
  return r | g << 8 | b << 16 | a << 24;
}

static int same_soup(const vx_soup *a, const vx_soup *b) {
  if (a->tri_count != b->tri_count || memcmp(a->pos, b->pos, (size_t)a->tri_count * 36)) return 0;
  if (memcmp(a->bbox_min, b->bbox_min, sizeof a->bbox_min) ||
      memcmp(a->bbox_max, b->bbox_max, sizeof a->bbox_max) ||
      a->skipped_degenerate != b->skipped_degenerate || a->mesh_count != b->mesh_count)
    return 0;
  if (!a->color != !b->color) return 0;
  if (!a->color) return 1;
  const vx_soup_color *x = a->color, *y = b->color;
  if (x->material_count != y->material_count || x->texture_count != y->texture_count) return 0;
  if (memcmp(x->materials, y->materials, x->material_count * sizeof(vx_material))) return 0;
  for (uint32_t i = 0; i < x->texture_count; i++)
    if (x->textures[i].width != y->textures[i].width ||
        x->textures[i].height != y->textures[i].height ||
        memcmp(x->textures[i].rgba, y->textures[i].rgba,
               (size_t)x->textures[i].width * x->textures[i].height * 4))
      return 0;
  if (memcmp(x->material, y->material, (size_t)a->tri_count * 4)) return 0;
  if (!x->uv != !y->uv || (x->uv && memcmp(x->uv, y->uv, (size_t)a->tri_count * 24))) return 0;
  if (!x->corner_rgba != !y->corner_rgba ||
      (x->corner_rgba && memcmp(x->corner_rgba, y->corner_rgba, (size_t)a->tri_count * 12)))
    return 0;
  if (!x->warnings != !y->warnings || (x->warnings && strcmp(x->warnings, y->warnings))) return 0;
  return 1;
}

/* Imports path in process and isolated (60 s, 1 GiB): both must succeed with the same soup. */
static int import_both(const char *path, vx_soup *out) {
  vx_soup iso;
  vx_error e1, e2;
  memset(&e1, 0, sizeof e1);
  memset(&e2, 0, sizeof e2);
  vx_status s1 = vx_soup_import(path, out, &e1);
  vx_status s2 = vx_soup_import_isolated(path, 60.0, (uint64_t)1 << 30, &iso, &e2);
  CHECK_MSG(s1 == VX_OK, "%s: %s", path, e1.msg);
  CHECK_MSG(s2 == VX_OK, "%s: %s", path, e2.msg);
  if (s1 == VX_OK && s2 == VX_OK) CHECK_MSG(same_soup(out, &iso), "%s: isolated differs", path);
  vx_soup_free(&iso);
  if (out->color && out->color->warnings) fprintf(stderr, "  warnings: %s", out->color->warnings);
  return s1 == VX_OK;
}

/* The texel a uv falls on, nearest (uv (0,0) is the image's bottom-left corner: svo/soup.h). */
static uint32_t texel_at(const vx_texture *t, float u, float v) {
  int x = (int)floorf(u * (float)t->width), y = (int)floorf(v * (float)t->height);
  x = x < 0 ? 0 : x >= (int)t->width ? (int)t->width - 1 : x;
  y = y < 0 ? 0 : y >= (int)t->height ? (int)t->height - 1 : y;
  return t->rgba[(size_t)(t->height - 1 - (uint32_t)y) * t->width + (uint32_t)x];
}

/* The colour at barycentric point w of triangle t as svo/soup.h defines it (no alpha mode). */
static uint32_t soup_color_at(const vx_soup *m, uint64_t t, const float w[3]) {
  const vx_soup_color *c = m->color;
  const vx_material *mt = &c->materials[c->material[t]];
  if (mt->texture >= 0) {
    float u = 0, v = 0;
    for (int k = 0; k < 3; k++) {
      u += w[k] * c->uv[6 * t + 2 * k];
      v += w[k] * c->uv[6 * t + 2 * k + 1];
    }
    return texel_at(&c->textures[mt->texture], u, v);
  }
  if (c->corner_rgba) return c->corner_rgba[3 * t];
  return mt->factor;
}

/* A unit quad in z = 0, two triangles, vt at its corners. */
static const char *quad_obj(const char *mtl, const char *usemtl) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "mtllib %s\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
           "usemtl %s\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n", mtl, usemtl);
  return buf;
}

/* 2x2 texels, rows top first: red green / blue white */
static const uint8_t quad_px[16] = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255};

static void obj_mtl_texture_uv_orientation(void) {
  write_png("quad.png", 2, 2, 4, quad_px);
  write_text("quad.mtl", "newmtl tex\nKd 0.5 0.5 0.5\nmap_Kd quad.png\n");
  vx_soup m;
  if (!import_both(write_text("quad.obj", quad_obj("quad.mtl", "tex")), &m)) return;
  CHECK(m.tri_count == 2 && m.color);
  if (!m.color) return;
  const vx_soup_color *c = m.color;
  CHECK(c->texture_count == 1 && c->material_count == 1 && c->uv && !c->corner_rgba);
  CHECK(c->warnings == NULL);
  CHECK(c->textures[0].width == 2 && c->textures[0].height == 2);
  CHECK(c->textures[0].rgba[0] == rgba(255, 0, 0, 255));
  CHECK(c->textures[0].rgba[2] == rgba(0, 0, 255, 255));
  CHECK(c->materials[0].texture == 0 && c->materials[0].alpha_mode == VX_ALPHA_OPAQUE);
  /* a textured OBJ material shows its texture as it is (Kd is its untextured colour) */
  CHECK(c->materials[0].factor == 0xffffffffu);
  /* near each corner of the quad: the texel of that corner of the image */
  for (uint64_t t = 0; t < m.tri_count; t++) {
    for (int k = 0; k < 3; k++) {
      const float *p = m.pos + 9 * t + 3 * k;
      float w[3] = {0.1f, 0.1f, 0.1f};
      w[k] = 0.8f;
      uint32_t want = p[0] < 0.5f ? (p[1] < 0.5f ? rgba(0, 0, 255, 255) : rgba(255, 0, 0, 255))
                                  : (p[1] < 0.5f ? rgba(255, 255, 255, 255) : rgba(0, 255, 0, 255));
      CHECK_MSG(soup_color_at(&m, t, w) == want, "triangle %llu corner %d at (%g, %g): %08x",
                (unsigned long long)t, k, p[0], p[1], soup_color_at(&m, t, w));
      CHECK(c->uv[6 * t + 2 * k] == p[0] && c->uv[6 * t + 2 * k + 1] == p[1]);
    }
  }
  vx_soup_free(&m);
}

static void texture_path_variants(void) {
  CHECK(mkdir(tmp_path("Textures"), 0755) == 0);
  write_png("Textures/My Tex.png", 2, 2, 4, quad_px);
  write_text("variants.mtl",
             "newmtl a\nmap_Kd textures\\my%20tex.PNG\n"
             "newmtl b\nmap_Kd C:\\artist\\somewhere\\TEXTURES\\MY TEX.png\n");
  write_text("variants.obj",
             "mtllib variants.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\n"
             "vt 0 1\nusemtl a\nf 1/1 2/2 3/3\nusemtl b\nf 1/1 3/3 4/4\n");
  vx_soup m;
  if (!import_both(tmp_path("variants.obj"), &m)) return;
  CHECK(m.color && m.color->warnings == NULL);
  /* both names find the one file (decoded once) */
  CHECK(m.color && m.color->texture_count == 1 && m.color->material_count == 1);
  vx_soup_free(&m);
}

static void vertex_colored_ply(void) {
  const char *ply = "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
                    "property float z\nproperty uchar red\nproperty uchar green\n"
                    "property uchar blue\nelement face 2\nproperty list uchar int vertex_indices\n"
                    "end_header\n0 0 0 255 0 0\n1 0 0 0 255 0\n1 1 0 0 0 255\n0 1 0 10 20 30\n"
                    "3 0 1 2\n3 0 2 3\n";
  vx_soup m;
  if (!import_both(write_text("vc.ply", ply), &m)) return;
  CHECK(m.color && m.color->corner_rgba && !m.color->uv && m.color->texture_count == 0);
  if (!m.color || !m.color->corner_rgba) return;
  const vx_material *mt = &m.color->materials[m.color->material[0]];
  CHECK(mt->texture == -1 && mt->alpha_mode == VX_ALPHA_OPAQUE);
  /* each corner's colour is the colour of the vertex at its position (sRGB bytes as stored) */
  for (uint64_t t = 0; t < m.tri_count; t++)
    for (int k = 0; k < 3; k++) {
      const float *p = m.pos + 9 * t + 3 * k;
      uint32_t want = p[0] == 0 && p[1] == 0   ? rgba(255, 0, 0, 255)
                      : p[0] == 1 && p[1] == 0 ? rgba(0, 255, 0, 255)
                      : p[0] == 1 && p[1] == 1 ? rgba(0, 0, 255, 255)
                                               : rgba(10, 20, 30, 255);
      CHECK_MSG(m.color->corner_rgba[3 * t + k] == want, "%08x", m.color->corner_rgba[3 * t + k]);
    }
  vx_soup_free(&m);
  /* an alpha below 255 on a vertex: the material blends (opaque otherwise, as above) */
  const char *plya = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                     "property float z\nproperty uchar red\nproperty uchar green\n"
                     "property uchar blue\nproperty uchar alpha\nelement face 1\n"
                     "property list uchar int vertex_indices\nend_header\n0 0 0 255 0 0 255\n"
                     "1 0 0 0 255 0 64\n0 1 0 0 0 255 255\n3 0 1 2\n";
  if (!import_both(write_text("vca.ply", plya), &m)) return;
  CHECK(m.color && m.color->corner_rgba && m.color->corner_rgba[1] == rgba(0, 255, 0, 64));
  CHECK(m.color && m.color->materials[m.color->material[0]].alpha_mode == VX_ALPHA_BLEND);
  vx_soup_free(&m);
}

static void material_only_obj_and_no_colour(void) {
  write_text("kd.mtl", "newmtl red\nKd 1 0 0\nnewmtl half\nKd 0.5 0.5 0.5\n");
  write_text("kd.obj", "mtllib kd.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nusemtl red\n"
                       "f 1 2 3\nusemtl half\nf 1 3 4\n");
  vx_soup m;
  if (import_both(tmp_path("kd.obj"), &m)) {
    CHECK(m.color && m.color->material_count == 2 && !m.color->uv && !m.color->corner_rgba);
    if (m.color) {
      int red = 0, half = 0;
      for (uint64_t t = 0; t < m.tri_count; t++) {
        uint32_t f = m.color->materials[m.color->material[t]].factor;
        red += f == rgba(255, 0, 0, 255);
        half += f == rgba(188, 188, 188, 255); /* linear 0.5, sRGB-encoded: 187.5 -> 188 */
      }
      CHECK_MSG(red == 1 && half == 1, "red %d half %d", red, half);
    }
    vx_soup_free(&m);
  }
  /* no material file, no vertex colour: assimp's default material only -> no colour */
  if (import_both(write_text("plain.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), &m)) {
    CHECK(m.color == NULL);
    vx_soup_free(&m);
  }
  const char *ply = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                    "property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                    "end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n";
  if (import_both(write_text("plain.ply", ply), &m)) {
    CHECK(m.color == NULL);
    vx_soup_free(&m);
  }
}

static void obj_alpha(void) {
  /* map_d: left column transparent, right opaque (a grey image) */
  const uint8_t d_px[4] = {0, 255, 0, 255};
  write_png("d.png", 2, 2, 1, d_px);
  /* an RGBA diffuse texture with a transparent texel */
  uint8_t rgba_px[16];
  memcpy(rgba_px, quad_px, 16);
  rgba_px[3] = 0;
  write_png("rgba.png", 2, 2, 4, rgba_px);
  write_text("alpha.mtl", "newmtl cut\nmap_Kd quad.png\nmap_d d.png\n"
                          "newmtl rgba\nmap_Kd rgba.png\n"
                          "newmtl glass\nKd 0 0 1\nd 0.5\n");
  write_png("quad.png", 2, 2, 4, quad_px);
  write_text("alpha.obj",
             "mtllib alpha.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\n"
             "vt 0 1\nusemtl cut\nf 1/1 2/2 3/3\nusemtl rgba\nf 1/1 3/3 4/4\n"
             "usemtl glass\nf 1/1 2/2 4/4\n");
  vx_soup m;
  if (!import_both(tmp_path("alpha.obj"), &m)) return;
  CHECK(m.color && m.tri_count == 3);
  if (!m.color) return;
  int seen = 0;
  for (uint64_t t = 0; t < m.tri_count; t++) {
    const vx_material *mt = &m.color->materials[m.color->material[t]];
    if (mt->texture >= 0) {
      /* cut-outs: the texture's alpha, a mask at 0.5 */
      CHECK(mt->alpha_mode == VX_ALPHA_MASK && mt->alpha_cutoff == 0.5f);
      const uint32_t *x = m.color->textures[mt->texture].rgba;
      if (x[0] == rgba(255, 0, 0, 0) && x[1] == rgba(0, 255, 0, 255) &&
          x[2] == rgba(0, 0, 255, 0) && x[3] == rgba(255, 255, 255, 255))
        seen |= 1; /* quad.png with map_d's left column transparent */
      if (x[0] == rgba(255, 0, 0, 0) && x[1] == rgba(0, 255, 0, 255) &&
          x[2] == rgba(0, 0, 255, 255) && x[3] == rgba(255, 255, 255, 255))
        seen |= 2; /* rgba.png as it is */
    } else {
      /* d 0.5: blended with that alpha */
      CHECK(mt->alpha_mode == VX_ALPHA_BLEND && mt->factor == rgba(0, 0, 255, 128));
      seen |= 4;
    }
  }
  CHECK_MSG(seen == 7, "seen %d", seen);
  vx_soup_free(&m);
}

/* ---- GLB -------------------------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); /* little-endian hosts only */ }

/* A GLB: one quad (glTF uv (0,0) at the image's top-left), material with an embedded PNG; xform:
 * the base-colour texture's KHR_texture_transform object (JSON), or NULL. */
static size_t make_glb(uint8_t *out, size_t cap, const char *material_extra, int with_texture,
                       int with_colors, const char *xform) {
  int png_len = 0;
  unsigned char *png = stbi_write_png_to_mem(quad_px, 8, 2, 2, 4, &png_len);
  if (!png) CHECK_FATAL("stbi_write_png_to_mem");
  float pos[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
  /* glTF: v down; the position (0,0) carries uv (0,1): the image's bottom-left */
  float uv[8] = {0, 1, 1, 1, 1, 0, 0, 0};
  uint16_t idx[6] = {0, 1, 2, 0, 2, 3};
  uint8_t bin[4096];
  size_t bl = 0;
  memcpy(bin, pos, 48);
  memcpy(bin + 48, uv, 32);
  memcpy(bin + 80, idx, 12);
  /* COLOR_0 (linear RGBA floats): red, green, blue, half grey */
  const float vc[16] = {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0.5f, 0.5f, 0.5f, 1};
  memcpy(bin + 92, vc, 64);
  bl = 156;
  memcpy(bin + bl, png, (size_t)png_len);
  size_t png_off = bl;
  bl += (size_t)png_len;
  while (bl % 4) bin[bl++] = 0;
  free(png);
  char texinfo[1024];
  snprintf(texinfo, sizeof texinfo, ",\"baseColorTexture\":{\"index\":0%s%s%s}",
           xform ? ",\"extensions\":{\"KHR_texture_transform\":" : "", xform ? xform : "",
           xform ? "}" : "");
  char json[4096];
  int jl = snprintf(
      json, sizeof json,
      "{\"asset\":{\"version\":\"2.0\"},%s\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
      "\"nodes\":[{\"mesh\":0}],\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,"
      "\"TEXCOORD_0\":1%s},\"indices\":2,\"material\":0}]}],"
      "\"materials\":[{\"name\":\"m\",\"pbrMetallicRoughness\":{\"baseColorFactor\":[1,0.5,1,1]%s}"
      "%s}],"
      "\"textures\":[{\"source\":0}],\"images\":[{\"bufferView\":3,\"mimeType\":\"image/png\"}],"
      "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\","
      "\"min\":[0,0,0],\"max\":[1,1,0]},{\"bufferView\":1,\"componentType\":5126,\"count\":4,"
      "\"type\":\"VEC2\"},{\"bufferView\":2,\"componentType\":5123,\"count\":6,"
      "\"type\":\"SCALAR\"},{\"bufferView\":4,\"componentType\":5126,\"count\":4,"
      "\"type\":\"VEC4\"}],"
      "\"bufferViews\":[{\"buffer\":0,\"byteOffset\":0,\"byteLength\":48},{\"buffer\":0,"
      "\"byteOffset\":48,\"byteLength\":32},{\"buffer\":0,\"byteOffset\":80,\"byteLength\":12},"
      "{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%d},{\"buffer\":0,\"byteOffset\":92,"
      "\"byteLength\":64}],\"buffers\":[{\"byteLength\":%zu}]}",
      xform ? "\"extensionsUsed\":[\"KHR_texture_transform\"]," : "",
      with_colors ? ",\"COLOR_0\":3" : "", with_texture ? texinfo : "", material_extra, png_off,
      png_len, bl);
  while (jl % 4) json[jl++] = ' ';
  size_t total = 12 + 8 + (size_t)jl + 8 + bl;
  if (total > cap) CHECK_FATAL("GLB too large");
  memcpy(out, "glTF", 4);
  put32(out + 4, 2);
  put32(out + 8, (uint32_t)total);
  put32(out + 12, (uint32_t)jl);
  memcpy(out + 16, "JSON", 4);
  memcpy(out + 20, json, (size_t)jl);
  put32(out + 20 + jl, (uint32_t)bl);
  memcpy(out + 24 + jl, "BIN\0", 4);
  memcpy(out + 28 + jl, bin, bl);
  return total;
}

static void glb_embedded_texture_and_alpha_modes(void) {
  static uint8_t glb[16384];
  const struct {
    const char *extra;
    uint32_t mode;
    float cutoff;
  } cases[] = {{"", VX_ALPHA_OPAQUE, 0.5f},
               {",\"alphaMode\":\"MASK\",\"alphaCutoff\":0.25", VX_ALPHA_MASK, 0.25f},
               {",\"alphaMode\":\"BLEND\"", VX_ALPHA_BLEND, 0.5f}};
  for (int i = 0; i < 3; i++) {
    size_t n = make_glb(glb, sizeof glb, cases[i].extra, 1, 0, NULL);
    char name[32];
    snprintf(name, sizeof name, "quad%d.glb", i);
    vx_soup m;
    if (!import_both(write_file(name, glb, n), &m)) continue;
    CHECK(m.color && m.color->texture_count == 1 && m.color->material_count == 1);
    if (!m.color || m.color->texture_count != 1) {
      vx_soup_free(&m);
      continue;
    }
    const vx_material *mt = &m.color->materials[0];
    CHECK_MSG(mt->alpha_mode == cases[i].mode && mt->alpha_cutoff == cases[i].cutoff,
              "case %d: mode %u cutoff %g", i, mt->alpha_mode, mt->alpha_cutoff);
    CHECK(mt->texture == 0);
    CHECK(mt->factor == vx_rgba_pack_linear(1.0f, 0.5f, 1.0f, 1.0f));
    CHECK(memcmp(m.color->textures[0].rgba, quad_px, 16) == 0);
    for (uint64_t t = 0; t < m.tri_count; t++)
      for (int k = 0; k < 3; k++) {
        const float *p = m.pos + 9 * t + 3 * k;
        float w[3] = {0.1f, 0.1f, 0.1f};
        w[k] = 0.8f;
        uint32_t want = p[0] < 0.5f ? (p[1] < 0.5f ? rgba(0, 0, 255, 255) : rgba(255, 0, 0, 255))
                                    : (p[1] < 0.5f ? rgba(255, 255, 255, 255)
                                                   : rgba(0, 255, 0, 255));
        CHECK_MSG(soup_color_at(&m, t, w) == want, "glb corner (%g, %g): %08x", p[0], p[1],
                  soup_color_at(&m, t, w));
      }
    vx_soup_free(&m);
  }
  /* a material factor alone (no texture): its colour */
  size_t n = make_glb(glb, sizeof glb, "", 0, 0, NULL);
  vx_soup m;
  if (import_both(write_file("factor.glb", glb, n), &m)) {
    CHECK(m.color && m.color->texture_count == 0 &&
          m.color->materials[m.color->material[0]].factor ==
              vx_rgba_pack_linear(1.0f, 0.5f, 1.0f, 1.0f));
    vx_soup_free(&m);
  }
  /* vertex colours (linear in glTF) times the base colour factor (1, 0.5, 1, 1) */
  n = make_glb(glb, sizeof glb, "", 0, 1, NULL);
  if (import_both(write_file("vc.glb", glb, n), &m)) {
    CHECK(m.color && m.color->corner_rgba);
    for (uint64_t t = 0; m.color && m.color->corner_rgba && t < m.tri_count; t++)
      for (int k = 0; k < 3; k++) {
        const float *p = m.pos + 9 * t + 3 * k;
        uint32_t want = p[0] == 0 && p[1] == 0   ? vx_rgba_pack_linear(1, 0, 0, 1)
                        : p[0] == 1 && p[1] == 0 ? vx_rgba_pack_linear(0, 0.5f, 0, 1)
                        : p[0] == 1 && p[1] == 1 ? vx_rgba_pack_linear(0, 0, 1, 1)
                                                 : vx_rgba_pack_linear(0.5f, 0.25f, 0.5f, 1);
        CHECK_MSG(m.color->corner_rgba[3 * t + k] == want, "(%g, %g): %08x", p[0], p[1],
                  m.color->corner_rgba[3 * t + k]);
      }
    vx_soup_free(&m);
  }
}

/* ---- UV transforms --------------------------------------------------------------------------- */

/* KHR_texture_transform as glTF viewers apply it, in glTF's UVs (v down): x = offset u, v, scale
 * u, v, rotation r; uv' = offset + [cos r, sin r; -sin r, cos r] (scale * uv). (The extension's
 * example, offset [0, 1], rotation pi/2, scale [0.5, 0.5], shows the image's lower-left quadrant
 * so; reading its GLSL mat3 literal by columns would show the upper-right one.) */
static void khr_uv(const double x[5], double u, double v, double out[2]) {
  double c = cos(x[4]), s = sin(x[4]), su = x[2] * u, sv = x[3] * v;
  out[0] = c * su + s * sv + x[0];
  out[1] = -s * su + c * sv + x[1];
}

/* quad_px's texel at glTF uv (u, v), repeated (row 0 at v = 0), or 0 within 1e-3 of a texel
 * border (where either texel may be right). */
static uint32_t gltf_texel(double u, double v) {
  double fu = (u - floor(u)) * 2, fv = (v - floor(v)) * 2;
  if (fabs(fu - round(fu)) < 1e-3 || fabs(fv - round(fv)) < 1e-3) return 0;
  const uint8_t *p = quad_px + 4 * (2 * (int)fv + (int)fu);
  return rgba(p[0], p[1], p[2], p[3]);
}

/* The texel a soup uv falls on, repeated, nearest (uv (0,0) is the image's bottom-left corner). */
static uint32_t texel_wrap(const vx_texture *t, float u, float v) {
  double fu = u - floor(u), fv = v - floor(v);
  uint32_t x = (uint32_t)(fu * t->width), y = (uint32_t)(fv * t->height);
  x = x < t->width ? x : t->width - 1;
  y = y < t->height ? y : t->height - 1;
  return t->rgba[(size_t)(t->height - 1 - y) * t->width + x];
}

static void glb_texture_transform(void) {
  static uint8_t glb[16384];
  const double pi = 3.14159265358979323846;
  const double cases[][5] = {{0.25, 0.5, 0.5, 0.5, 0.0}, /* offset and scale: a quadrant */
                             {0.0, 1.0, 0.5, 0.5, pi / 2}, /* the extension's example */
                             {0.3, 0.2, 2.0, 0.5, 0.7},
                             {-0.2, 0.1, 1.5, -1.0, -2.5},
                             {0.1, 0.35, 3.0, 3.0, 0.3}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const double *x = cases[i];
    char xf[256], name[32];
    snprintf(xf, sizeof xf, "{\"offset\":[%.17g,%.17g],\"scale\":[%.17g,%.17g],\"rotation\":%.17g}",
             x[0], x[1], x[2], x[3], x[4]);
    size_t n = make_glb(glb, sizeof glb, "", 1, 0, xf);
    snprintf(name, sizeof name, "xf%zu.glb", i);
    vx_soup m;
    if (!import_both(write_file(name, glb, n), &m)) continue;
    const vx_soup_color *c = m.color;
    CHECK(c && c->uv && c->texture_count == 1 && !c->warnings);
    if (!c || !c->uv || c->texture_count != 1) {
      vx_soup_free(&m);
      continue;
    }
    /* the corners: make_glb's glTF uv is (x, 1 - y); the soup's v is up */
    for (uint64_t t = 0; t < m.tri_count; t++)
      for (int k = 0; k < 3; k++) {
        const float *p = m.pos + 9 * t + 3 * k;
        double g[2];
        khr_uv(x, p[0], 1.0 - p[1], g);
        CHECK_NEAR(c->uv[6 * t + 2 * k], g[0], 1e-5);
        CHECK_NEAR(c->uv[6 * t + 2 * k + 1], 1.0 - g[1], 1e-5);
      }
    /* the colour at points inside each triangle: the texel a glTF viewer shows there */
    int checked = 0;
    for (uint64_t t = 0; t < m.tri_count; t++)
      for (int a = 1; a < 8; a++)
        for (int b = 1; a + b < 8; b++) {
          const float w[3] = {(float)a / 8, (float)b / 8, 1.0f - (float)(a + b) / 8};
          double px = 0, py = 0;
          float u = 0, v = 0;
          for (int k = 0; k < 3; k++) {
            px += w[k] * m.pos[9 * t + 3 * k];
            py += w[k] * m.pos[9 * t + 3 * k + 1];
            u += w[k] * c->uv[6 * t + 2 * k];
            v += w[k] * c->uv[6 * t + 2 * k + 1];
          }
          double g[2];
          khr_uv(x, px, 1.0 - py, g);
          uint32_t want = gltf_texel(g[0], g[1]);
          if (!want) continue;
          uint32_t got = texel_wrap(&c->textures[0], u, v);
          CHECK_MSG(got == want, "case %zu at (%g, %g): %08x, a viewer shows %08x", i, px, py, got,
                    want);
          checked++;
        }
    CHECK_MSG(checked >= 30, "case %zu: %d points", i, checked);
    vx_soup_free(&m);
  }
  /* a scale past float's range (assimp keeps inf) and finite values too large to mean anything:
   * ignored with a warning, the UVs as the file has them */
  const char *bad[] = {"{\"scale\":[1e39,1]}", "{\"offset\":[1e30,0]}",
                       "{\"scale\":[1e20,1e20],\"rotation\":1e30}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t n = make_glb(glb, sizeof glb, "", 1, 0, bad[i]);
    char name[32];
    snprintf(name, sizeof name, "xfbad%zu.glb", i);
    vx_soup m;
    if (!import_both(write_file(name, glb, n), &m)) continue;
    const vx_soup_color *c = m.color;
    CHECK_MSG(c && c->uv && c->warnings && strstr(c->warnings, "UV transform"), "%s", bad[i]);
    for (uint64_t t = 0; c && c->uv && t < m.tri_count; t++)
      for (int k = 0; k < 3; k++)
        CHECK(c->uv[6 * t + 2 * k] == m.pos[9 * t + 3 * k] &&
              c->uv[6 * t + 2 * k + 1] == m.pos[9 * t + 3 * k + 1]);
    vx_soup_free(&m);
  }
}

/* OBJ: assimp's reader (5.2) skips map_Kd -o/-s (docs/COLOR.md, Limits): the texture named after
 * them is found and the UVs are the file's. */
static void obj_texture_options_skipped(void) {
  write_png("quad.png", 2, 2, 4, quad_px);
  write_text("oxf.mtl", "newmtl tex\nmap_Kd -o 0.5 0 0 -s 2 2 1 quad.png\n");
  vx_soup m;
  if (!import_both(write_text("oxf.obj", quad_obj("oxf.mtl", "tex")), &m)) return;
  const vx_soup_color *c = m.color;
  CHECK(c && c->uv && c->texture_count == 1 && !c->warnings);
  for (uint64_t t = 0; c && c->uv && t < m.tri_count; t++)
    for (int k = 0; k < 3; k++)
      CHECK(c->uv[6 * t + 2 * k] == m.pos[9 * t + 3 * k] &&
            c->uv[6 * t + 2 * k + 1] == m.pos[9 * t + 3 * k + 1]);
  vx_soup_free(&m);
}

/* A COLLADA quad (the OBJ quad's positions and UVs) with diffuse texture quad.png; extra:
 * the texture's <extra> (Maya's repeat/offset/rotate, which assimp reports as a UV transform). */
static const char *quad_dae(const char *name, const char *extra) {
  char buf[4096];
  snprintf(buf, sizeof buf,
           "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
           "<COLLADA xmlns=\"http://www.collada.org/2005/11/COLLADASchema\" version=\"1.4.1\">"
           "<asset><unit name=\"meter\" meter=\"1\"/><up_axis>Y_UP</up_axis></asset>"
           "<library_images><image id=\"img\"><init_from>quad.png</init_from></image>"
           "</library_images><library_effects><effect id=\"fx\"><profile_COMMON>"
           "<newparam sid=\"surf\"><surface type=\"2D\"><init_from>img</init_from></surface>"
           "</newparam><newparam sid=\"samp\"><sampler2D><source>surf</source></sampler2D>"
           "</newparam><technique sid=\"common\"><lambert><diffuse>"
           "<texture texture=\"samp\" texcoord=\"UV0\">%s</texture></diffuse></lambert>"
           "</technique></profile_COMMON></effect></library_effects><library_materials>"
           "<material id=\"mat\" name=\"mat\"><instance_effect url=\"#fx\"/></material>"
           "</library_materials><library_geometries><geometry id=\"g\"><mesh><source id=\"p\">"
           "<float_array id=\"pa\" count=\"12\">0 0 0 1 0 0 1 1 0 0 1 0</float_array>"
           "<technique_common><accessor source=\"#pa\" count=\"4\" stride=\"3\">"
           "<param name=\"X\" type=\"float\"/><param name=\"Y\" type=\"float\"/>"
           "<param name=\"Z\" type=\"float\"/></accessor></technique_common></source>"
           "<source id=\"t\"><float_array id=\"ta\" count=\"8\">0 0 1 0 1 1 0 1</float_array>"
           "<technique_common><accessor source=\"#ta\" count=\"4\" stride=\"2\">"
           "<param name=\"S\" type=\"float\"/><param name=\"T\" type=\"float\"/></accessor>"
           "</technique_common></source><vertices id=\"v\">"
           "<input semantic=\"POSITION\" source=\"#p\"/></vertices>"
           "<triangles material=\"m\" count=\"2\">"
           "<input semantic=\"VERTEX\" source=\"#v\" offset=\"0\"/>"
           "<input semantic=\"TEXCOORD\" source=\"#t\" offset=\"1\" set=\"0\"/>"
           "<p>0 0 1 1 2 2 0 0 2 2 3 3</p></triangles></mesh></geometry></library_geometries>"
           "<library_visual_scenes><visual_scene id=\"s\"><node id=\"n\">"
           "<instance_geometry url=\"#g\"><bind_material><technique_common>"
           "<instance_material symbol=\"m\" target=\"#mat\"><bind_vertex_input semantic=\"UV0\" "
           "input_semantic=\"TEXCOORD\" input_set=\"0\"/></instance_material></technique_common>"
           "</bind_material></instance_geometry></node></visual_scene></library_visual_scenes>"
           "<scene><instance_visual_scene url=\"#s\"/></scene></COLLADA>\n",
           extra);
  return write_text(name, buf);
}

/* Other formats' UV transforms are not applied: COLLADA's (Maya's place2dTexture) gives a warning
 * and the UVs stay as the file has them; without one (assimp still reports the identity) there is
 * no warning. */
static void other_formats_uv_transform_not_applied(void) {
  write_png("quad.png", 2, 2, 4, quad_px);
  const char *maya = "<extra><technique profile=\"MAYA\"><repeatU>2</repeatU><repeatV>3</repeatV>"
                     "<offsetU>0.25</offsetU><rotateUV>0.3</rotateUV></technique></extra>";
  for (int with = 0; with < 2; with++) {
    vx_soup m;
    if (!import_both(quad_dae(with ? "xf.dae" : "plain.dae", with ? maya : ""), &m)) continue;
    const vx_soup_color *c = m.color;
    CHECK(c && c->uv && c->texture_count == 1);
    if (with)
      CHECK(c && c->warnings && strstr(c->warnings, "material 'mat': its texture's UV transform"));
    else
      CHECK(c && !c->warnings);
    for (uint64_t t = 0; c && c->uv && t < m.tri_count; t++)
      for (int k = 0; k < 3; k++)
        CHECK(c->uv[6 * t + 2 * k] == m.pos[9 * t + 3 * k] &&
              c->uv[6 * t + 2 * k + 1] == m.pos[9 * t + 3 * k + 1]);
    vx_soup_free(&m);
  }
}


/* ---- bad input -------------------------------------------------------------------------------- */

/* An OBJ quad whose material's map_Kd is `ref`: imports (in process and isolated, equal), with
 * material colour (Kd 0 1 0) and a warning that contains `expect`; returns the warnings. */
static void bad_texture(const char *tag, const char *ref, const char *expect) {
  char mtl[2048], name[64];
  snprintf(mtl, sizeof mtl, "newmtl bad\nKd 0 1 0\nmap_Kd %s\n", ref);
  snprintf(name, sizeof name, "%s.mtl", tag);
  write_text(name, mtl);
  char obj[64];
  snprintf(obj, sizeof obj, "%s.obj", tag);
  vx_soup m;
  if (!import_both(write_text(obj, quad_obj(name, "bad")), &m)) return;
  CHECK_MSG(m.color && m.color->texture_count == 0, "%s", tag);
  if (m.color) {
    CHECK_MSG(m.color->materials[m.color->material[0]].factor == rgba(0, 255, 0, 255), "%s", tag);
    const char *w = m.color->warnings ? m.color->warnings : "";
    CHECK_MSG(strstr(w, expect) != NULL, "%s: warning '%s' lacks '%s'", tag, w, expect);
    CHECK_MSG(strlen(w) < 300, "%s: warning of %zu bytes", tag, strlen(w));
  }
  vx_soup_free(&m);
}

/* a 16x16 baseline JPEG (stb_image_write, quality 50) */
static const uint8_t jpeg16[705] = {
    255,216,255,224,0,16,74,70,73,70,0,1,1,0,0,1,0,1,0,0,255,219,0,132,0,16,
    11,12,14,12,10,16,14,13,14,18,17,16,19,24,40,26,24,22,22,24,49,35,37,29,40,58,
    51,61,60,57,51,56,55,64,72,92,78,64,68,87,69,55,56,80,109,81,87,95,98,103,104,103,
    62,77,113,121,112,100,120,92,101,103,99,1,17,18,18,24,21,24,47,26,26,47,99,66,56,66,
    99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,
    99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99,255,192,
    0,17,8,0,16,0,16,3,1,34,0,2,17,1,3,17,1,255,196,1,162,0,0,1,5,1,
    1,1,1,1,1,0,0,0,0,0,0,0,0,1,2,3,4,5,6,7,8,9,10,11,16,0,
    2,1,3,3,2,4,3,5,5,4,4,0,0,1,125,1,2,3,0,4,17,5,18,33,49,65,
    6,19,81,97,7,34,113,20,50,129,145,161,8,35,66,177,193,21,82,209,240,36,51,98,114,130,
    9,10,22,23,24,25,26,37,38,39,40,41,42,52,53,54,55,56,57,58,67,68,69,70,71,72,
    73,74,83,84,85,86,87,88,89,90,99,100,101,102,103,104,105,106,115,116,117,118,119,120,121,122,
    131,132,133,134,135,136,137,138,146,147,148,149,150,151,152,153,154,162,163,164,165,166,167,168,169,170,
    178,179,180,181,182,183,184,185,186,194,195,196,197,198,199,200,201,202,210,211,212,213,214,215,216,217,
    218,225,226,227,228,229,230,231,232,233,234,241,242,243,244,245,246,247,248,249,250,1,0,3,1,1,
    1,1,1,1,1,1,1,0,0,0,0,0,0,1,2,3,4,5,6,7,8,9,10,11,17,0,
    2,1,2,4,4,3,4,7,5,4,4,0,1,2,119,0,1,2,3,17,4,5,33,49,6,18,
    65,81,7,97,113,19,34,50,129,8,20,66,145,161,177,193,9,35,51,82,240,21,98,114,209,10,
    22,36,52,225,37,241,23,24,25,26,38,39,40,41,42,53,54,55,56,57,58,67,68,69,70,71,
    72,73,74,83,84,85,86,87,88,89,90,99,100,101,102,103,104,105,106,115,116,117,118,119,120,121,
    122,130,131,132,133,134,135,136,137,138,146,147,148,149,150,151,152,153,154,162,163,164,165,166,167,168,
    169,170,178,179,180,181,182,183,184,185,186,194,195,196,197,198,199,200,201,202,210,211,212,213,214,215,
    216,217,218,226,227,228,229,230,231,232,233,234,242,243,244,245,246,247,248,249,250,255,218,0,12,3,
    1,0,2,17,3,17,0,63,0,108,65,33,59,45,82,32,86,65,129,105,7,154,219,79,64,89,
    190,67,219,36,119,252,169,110,112,93,133,192,143,124,82,110,219,119,49,145,128,111,72,151,149,39,
    32,241,144,7,181,58,85,118,80,179,249,129,103,66,0,187,157,96,66,71,253,51,94,24,14,9,
    233,253,105,109,247,58,168,181,14,193,208,174,203,75,109,128,31,118,127,152,19,158,163,166,40,15,
    67,255,217,
};

static void lying_and_truncated_textures(void) {
  /* a PNG header claiming 60000 x 60000, then junk: 100 bytes */
  uint8_t png[100];
  memset(png, 0x41, sizeof png);
  const uint8_t head[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                          0, 0, 0xea, 0x60, 0, 0, 0xea, 0x60, 8, 6, 0, 0, 0};
  memcpy(png, head, sizeof head);
  write_file("huge.png", png, sizeof png);
  bad_texture("huge", "huge.png", "'huge.png'");
  bad_texture("huge2", "huge.png", "60000x60000");
  /* one that claims 8000 x 8000 (768 MiB to decode, within stb_image's bound) in an import
   * child of 256 MiB: refused before decoding, by the memory left */
  png[18] = 0x1f, png[19] = 0x40, png[22] = 0x1f, png[23] = 0x40;
  write_file("big.png", png, sizeof png);
  write_text("big.mtl", "newmtl bad\nKd 0 1 0\nmap_Kd big.png\n");
  vx_soup m;
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status st = vx_soup_import_isolated(write_text("big.obj", quad_obj("big.mtl", "bad")), 60.0,
                                         (uint64_t)256 << 20, &m, &e);
  CHECK_MSG(st == VX_OK, "%s", e.msg);
  if (st == VX_OK) {
    const char *w = m.color && m.color->warnings ? m.color->warnings : "";
    fprintf(stderr, "  warnings: %s", w);
    CHECK(strstr(w, "'big.png'") && strstr(w, "8000x8000") && strstr(w, "memory left"));
    CHECK(m.color && m.color->texture_count == 0);
    vx_soup_free(&m);
  }

  /* truncated PNG and JPEG: refused; truncated TGA: refused or decoded at its size, never more
   * (the JPEG is a literal: stb_image_write's JPEG writer trips UBSan) */
  uint8_t px[64 * 64 * 3];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
  const char *names[3] = {"t.png", "t.jpg", "t.tga"};
  int ok[3] = {stbi_write_png(tmp_path("t.png"), 64, 64, 3, px, 64 * 3),
               write_file("t.jpg", jpeg16, sizeof jpeg16) != NULL,
               stbi_write_tga(tmp_path("t.tga"), 64, 64, 3, px)};
  for (int i = 0; i < 3; i++) {
    CHECK(ok[i]);
    const char *p = tmp_path(names[i]);
    struct stat st;
    CHECK(stat(p, &st) == 0);
    CHECK(truncate(p, st.st_size / 3) == 0);
    char mtl[128], tag[16];
    snprintf(tag, sizeof tag, "trunc%d", i);
    snprintf(mtl, sizeof mtl, "newmtl bad\nKd 0 1 0\nmap_Kd %s\n", names[i]);
    char mname[32];
    snprintf(mname, sizeof mname, "%s.mtl", tag);
    write_text(mname, mtl);
    char oname[32];
    snprintf(oname, sizeof oname, "%s.obj", tag);
    vx_soup m;
    if (!import_both(write_text(oname, quad_obj(mname, "bad")), &m)) continue;
    CHECK(m.color != NULL);
    if (m.color) {
      const char *w = m.color->warnings ? m.color->warnings : "";
      int warned = strstr(w, names[i]) != NULL;
      uint32_t side = i == 1 ? 16 : 64;
      int decoded = m.color->texture_count == 1 && m.color->textures[0].width == side &&
                    m.color->textures[0].height == side;
      CHECK_MSG(warned != decoded, "%s: warned %d decoded %d", names[i], warned, decoded);
      if (i < 2) CHECK_MSG(warned, "a truncated %s decoded", names[i]);
    }
    vx_soup_free(&m);
  }
}

static void texture_paths_that_are_not_images(void) {
  CHECK(mkdir(tmp_path("adir.png"), 0755) == 0);
  bad_texture("dir", "adir.png", "a directory");
  CHECK(mkfifo(tmp_path("fifo.png"), 0644) == 0);
  bad_texture("fifo", "fifo.png", "a FIFO"); /* a reader that blocked would hang here */
  bad_texture("zero", "/dev/zero", "a device");
  bad_texture("passwd", "../../../../../../../../etc/passwd", "not an image");
  bad_texture("missing", "nowhere.png", "not found");
  /* a long name is cut in the warning */
  char longname[400];
  memset(longname, 'x', 300);
  strcpy(longname + 300, "_end.png");
  bad_texture("long", longname, "x_end.png");
  vx_soup m;
  vx_error e;
  if (vx_soup_import(tmp_path("long.obj"), &m, &e) == VX_OK) {
    CHECK(m.color && m.color->warnings && !strstr(m.color->warnings, longname));
    vx_soup_free(&m);
  }
  /* an embedded reference that is not there */
  bad_texture("star", "*7", "no such embedded texture");
}

static void nonfinite_and_huge_uvs(void) {
  write_png("quad.png", 2, 2, 4, quad_px);
  write_text("uv.mtl", "newmtl tex\nmap_Kd quad.png\n");
  write_text("uv.obj", "mtllib uv.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt nan nan\n"
                       "vt 1e30 -1e30\nvt inf 1\nvt 0.5 0.5\nusemtl tex\nf 1/1 2/2 3/3\n"
                       "f 1/4 3/3 4/2\n");
  vx_soup m;
  if (!import_both(tmp_path("uv.obj"), &m)) return;
  CHECK(m.color && m.color->uv && m.tri_count == 2);
  if (m.color && m.color->uv) {
    int big = 0;
    for (uint64_t i = 0; i < m.tri_count * 6; i++) {
      CHECK(isfinite(m.color->uv[i]));
      big |= m.color->uv[i] == 1e30f;
    }
    CHECK(big);
  }
  vx_soup_free(&m);
}

/* 10^6 materials in an MTL file: assimp makes an aiMaterial of some 13 KB of each (13 GB), so
 * the import child under a 1 GiB limit stops with a clear error, in bounded time and memory. */
static void a_million_materials_in_a_file(void) {
  FILE *f = fopen(tmp_path("many.mtl"), "w");
  if (!f) CHECK_FATAL("cannot write many.mtl");
  for (int i = 0; i < 1000000; i++) fprintf(f, "newmtl m%d\nKd 0.5 %g 0.25\n", i, (i % 97) / 96.0);
  fclose(f);
  write_text("few.obj", "mtllib many.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n"
                        "usemtl m5\nf 1 2 3\nusemtl m999999\nf 2 4 3\nusemtl m500000\nf 1 4 3\n");
  vx_soup m;
  vx_error e;
  memset(&e, 0, sizeof e);
  /* the limit, not the clock, must stop it: under ASan beside other tests the child has taken
   * over 120 s to reach it */
  vx_status s = vx_soup_import_isolated(tmp_path("few.obj"), 900.0, (uint64_t)1 << 30, &m, &e);
  fprintf(stderr, "  10^6 materials: %s\n", s == VX_OK ? "imported" : e.msg);
  CHECK_MSG(s == VX_ERR_LIMIT || (s == VX_OK && m.color && m.color->material_count == 3), "%s",
            e.msg);
  if (s == VX_OK) vx_soup_free(&m);
  unlink(tmp_path("many.mtl"));
}

/* ---- the public mesh (include/voxlod/mesh.h) -------------------------------------------------- */

static void mesh_load_notes_and_info(void) {
  write_text("notes.mtl", "newmtl bad\nKd 0 1 0\nmap_Kd gone.png\n");
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesh_load(write_text("notes.obj", quad_obj("notes.mtl", "bad")), NULL, &m, &e) ==
        VX_OK);
  if (!m) return;
  CHECK(strstr(vx_mesh_notes(m), "'gone.png'") != NULL);
  vx_mesh_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK(vx_mesh_get_info(m, &info) == VX_OK && info.has_color && info.materials == 1 &&
        info.textures == 0);
  CHECK(vx_mesh_set_vertex_colors(m, (const uint8_t *)"abc", 1, 3, &e) == VX_ERR_INVALID_ARG);
  vx_mesh_free(m);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/vx_test_color.XXXXXX");
  if (!mkdtemp(tmpdir)) CHECK_FATAL("cannot make a temporary directory");
  RUN(obj_mtl_texture_uv_orientation);
  RUN(texture_path_variants);
  RUN(vertex_colored_ply);
  RUN(material_only_obj_and_no_colour);
  RUN(obj_alpha);
  RUN(glb_embedded_texture_and_alpha_modes);
  RUN(glb_texture_transform);
  RUN(obj_texture_options_skipped);
  RUN(other_formats_uv_transform_not_applied);
  RUN(lying_and_truncated_textures);
  RUN(texture_paths_that_are_not_images);
  RUN(nonfinite_and_huge_uvs);
  RUN(mesh_load_notes_and_info);
  RUN(a_million_materials_in_a_file);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_summary();
}
