/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_color_import.c - colour in the mesh import (svo/soup.h vx_soup_color), with files
 * the test writes itself: images by stb_image_write (a writer that shares no code with the
 * decoder), OBJ/MTL and PLY text, a GLB assembled byte by byte.
 *
 * Good input: an OBJ+MTL with a map_Kd PNG (texels exact, the UV orientation checked by sampling a
 * 2x2 texture at a known uv with a nearest-texel lookup written here), path variants (case, '\',
 * %20), a vertex-coloured PLY, material-only OBJ colours, a GLB with an embedded PNG and glTF
 * alpha modes, OBJ cut-outs (map_d, RGBA map_Kd) and opacity, no colour for a plain mesh.
 * Bad input: a PNG header claiming 60000x60000, truncated PNG/JPEG/TGA, a texture path that is a
 * directory, a FIFO, /dev/zero, '../../etc/passwd' or a 300-character name, UVs NaN and 1e30,
 * 10^6 materials: warnings (or a clear error), never a failed conversion or a hang.
 * Every case goes through vx_soup_import and vx_soup_import_isolated, whose results must be the
 * same bit for bit; the record parser of the isolated import refuses damaged records.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/color_record.h"
#include "formats/mesh_import.h"
#include "formats/mesh_material.h"
#include "formats/texture.h"
#include "lib/internal.h"
#include "svo/color.h"

#include <assimp/material.h>
#include <assimp/scene.h>
#include "check.h"

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#if defined(__SANITIZE_ADDRESS__)
#define VX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VX_TEST_ASAN 1
#endif
#endif

#ifdef VX_TEST_ASAN
/* Under AddressSanitizer a failed allocation in the import child must reach assimp as
 * std::bad_alloc and the texture decoder as NULL (what they get without the sanitizer), not end
 * the child with a report. The runtime looks this function up by name: it stays visible. */
__attribute__((visibility("default"))) const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void) {
  return "allocator_may_return_null=1";
}
#endif

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
  CHECK(mt->texture == -1);
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

/* A GLB: one quad (glTF uv (0,0) at the image's top-left), material with an embedded PNG. */
static size_t make_glb(uint8_t *out, size_t cap, const char *material_extra, int with_texture,
                       int with_colors) {
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
  char json[4096];
  int jl = snprintf(
      json, sizeof json,
      "{\"asset\":{\"version\":\"2.0\"},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],"
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
      with_colors ? ",\"COLOR_0\":3" : "",
      with_texture ? ",\"baseColorTexture\":{\"index\":0}" : "", material_extra, png_off, png_len,
      bl);
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
    size_t n = make_glb(glb, sizeof glb, cases[i].extra, 1, 0);
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
  size_t n = make_glb(glb, sizeof glb, "", 0, 0);
  vx_soup m;
  if (import_both(write_file("factor.glb", glb, n), &m)) {
    CHECK(m.color && m.color->texture_count == 0 &&
          m.color->materials[m.color->material[0]].factor ==
              vx_rgba_pack_linear(1.0f, 0.5f, 1.0f, 1.0f));
    vx_soup_free(&m);
  }
  /* vertex colours (linear in glTF) times the base colour factor (1, 0.5, 1, 1) */
  n = make_glb(glb, sizeof glb, "", 0, 1);
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

  /* truncated PNG: refused; truncated JPEG and TGA: refused or decoded at their size, never more */
  uint8_t px[64 * 64 * 3];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
  const char *names[3] = {"t.png", "t.jpg", "t.tga"};
  int ok[3] = {stbi_write_png(tmp_path("t.png"), 64, 64, 3, px, 64 * 3),
               stbi_write_jpg(tmp_path("t.jpg"), 64, 64, 3, px, 90),
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
      int decoded = m.color->texture_count == 1 && m.color->textures[0].width == 64 &&
                    m.color->textures[0].height == 64;
      CHECK_MSG(warned != decoded, "%s: warned %d decoded %d", names[i], warned, decoded);
      if (i == 0) CHECK_MSG(warned, "a truncated PNG decoded");
    }
    vx_soup_free(&m);
  }
}

/* A JPEG whose Huffman table counts sum past 256 (stb_image 2.27 writes past its table: found by
 * fuzz_texture), after fill bytes: refused before the decoder reads it. A PNG whose bytes happen
 * to hold the same pattern still decodes. */
static void jpeg_huffman_overflow_refused(void) {
  uint8_t j[64] = {0xff, 0xff, 0xff, 0xd8, 0xff, 0xc4, 0x00, 0x30, 0x00};
  for (int k = 0; k < 16; k++) j[9 + k] = 0x20; /* 16 x 32 = 512 codes */
  vx_texture t;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK(vx_texture_decode(j, sizeof j, 0, &t, NULL, &e) == VX_ERR_FORMAT &&
        strstr(e.msg, "Huffman") && t.rgba == NULL);
  uint8_t px[16 * 16 * 3];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 13);
  int len = 0;
  unsigned char *png = stbi_write_png_to_mem(px, 48, 16, 16, 3, &len);
  CHECK(png != NULL);
  if (!png) return;
  unsigned char *big = (unsigned char *)malloc((size_t)len + 64);
  memcpy(big, png, (size_t)len);
  memcpy(big + len, j + 4, 40); /* after IEND: ignored by PNG readers */
  CHECK(vx_texture_decode(big, (size_t)len + 40, 0, &t, NULL, &e) == VX_OK && t.width == 16);
  vx_free(t.rgba);
  free(big);
  free(png);
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
  vx_status s = vx_soup_import_isolated(tmp_path("few.obj"), 120.0, (uint64_t)1 << 30, &m, &e);
  fprintf(stderr, "  10^6 materials: %s\n", s == VX_OK ? "imported" : e.msg);
  CHECK_MSG(s == VX_ERR_LIMIT || (s == VX_OK && m.color && m.color->material_count == 3), "%s",
            e.msg);
  if (s == VX_OK) vx_soup_free(&m);
  unlink(tmp_path("many.mtl"));
}

/* The material table itself, on scenes made here (what an importer could hand over without
 * assimp's 13 KB per material): 10^6 materials of which 66000 are used. When they have few
 * distinct colours they are merged; 66000 distinct ones are more than the table takes: a clear
 * error. */
static void material_table_capped(void) {
  enum { NM = 1000000, NUSED = 66000 };
  struct aiScene *sc = (struct aiScene *)calloc(1, sizeof *sc);
  struct aiMaterial *mats = (struct aiMaterial *)calloc(NM, sizeof *mats);
  struct aiMaterial **matp = (struct aiMaterial **)calloc(NM, sizeof *matp);
  struct aiMaterialProperty **propp = (struct aiMaterialProperty **)calloc(2 * (size_t)NM, sizeof *propp);
  struct aiMaterialProperty *props = (struct aiMaterialProperty *)calloc(NUSED, sizeof *props);
  float *cols = (float *)calloc(NUSED * 4, sizeof(float));
  struct aiMesh *meshes = (struct aiMesh *)calloc(NUSED, sizeof *meshes);
  struct aiMesh **meshp = (struct aiMesh **)calloc(NUSED, sizeof *meshp);
  if (!sc || !mats || !matp || !propp || !props || !cols || !meshes || !meshp)
    CHECK_FATAL("out of memory");
  for (int i = 0; i < NUSED; i++) { /* colour i: distinct after sRGB encoding to 8 bits */
    struct aiMaterialProperty *p = &props[i];
    strcpy(p->mKey.data, "$clr.diffuse");
    p->mKey.length = 12;
    p->mType = aiPTI_Float;
    p->mDataLength = 16;
    cols[4 * i] = vx_srgb_to_linear((float)(i & 255) / 255.0f);
    cols[4 * i + 1] = vx_srgb_to_linear((float)(i >> 8 & 255) / 255.0f);
    cols[4 * i + 2] = vx_srgb_to_linear((float)(i >> 16) / 255.0f);
    cols[4 * i + 3] = 1.0f;
    p->mData = (char *)(cols + 4 * i);
  }
  /* a name (assimp's string property: u32 length, the bytes, NUL): unnamed ones are defaults */
  struct aiMaterialProperty name;
  memset(&name, 0, sizeof name);
  static char name_data[8] = {1, 0, 0, 0, 'm', 0};
  strcpy(name.mKey.data, "?mat.name");
  name.mKey.length = 9;
  name.mType = aiPTI_String;
  name.mDataLength = 6;
  name.mData = name_data;
  sc->mNumMaterials = NM;
  sc->mMaterials = matp;
  sc->mNumMeshes = NUSED;
  sc->mMeshes = meshp;
  for (int distinct = 0; distinct < 2; distinct++) {
    for (int i = 0; i < NM; i++) {
      /* few colours: material i has colour i % 97; distinct: colour i for the used ones */
      propp[2 * i] = &props[distinct ? i % NUSED : i % 97];
      propp[2 * i + 1] = &name;
      mats[i].mProperties = &propp[2 * i];
      mats[i].mNumProperties = mats[i].mNumAllocated = 2;
      matp[i] = &mats[i];
    }
    for (int i = 0; i < NUSED; i++) {
      meshes[i].mNumFaces = 1;
      meshes[i].mMaterialIndex = (unsigned)(distinct ? i : i * 15);
      meshp[i] = &meshes[i];
    }
    vx_scene_color col;
    vx_error e;
    memset(&e, 0, sizeof e);
    vx_status s = vx_scene_color_build(sc, NULL, "obj", &col, &e);
    if (!distinct) {
      CHECK_MSG(s == VX_OK && col.color && col.color->material_count == 97, "%s", e.msg);
      /* each assimp material maps to the soup material of its colour */
      for (int i = 0; s == VX_OK && col.color && i < NUSED; i += 1000) {
        const vx_material *mt = &col.color->materials[col.mat_index[2 * (i * 15) + 1]];
        int k = i * 15 % 97;
        CHECK(mt->factor == (uint32_t)(k | 255u << 24));
      }
    } else {
      fprintf(stderr, "  %d distinct materials: %s\n", NUSED, e.msg);
      CHECK_MSG(s == VX_ERR_LIMIT && strstr(e.msg, "more than 65536 distinct materials"), "%s",
                e.msg);
    }
    vx_scene_color_release(&col);
  }
  free(sc);
  free(mats);
  free(matp);
  free(propp);
  free(props);
  free(cols);
  free(meshes);
  free(meshp);
}

/* An embedded texture of raw texels (aiTexel: b, g, r, a bytes; assimp's FBX and some others) on a
 * scene made here, named "*0" by its material: decoded to packed RGBA with the channels in place. */
static void embedded_raw_texels(void) {
  struct aiTexel tx[2] = {{0, 0, 255, 255}, {40, 30, 20, 10}}; /* red; r 20 g 30 b 40 a 10 */
  struct aiTexture tex;
  memset(&tex, 0, sizeof tex);
  tex.mWidth = 2;
  tex.mHeight = 1;
  tex.pcData = tx;
  struct aiTexture *texp = &tex;
  /* material: name, diffuse texture "*0" (assimp's string property: u32 length, bytes, NUL) */
  static char name_data[8] = {1, 0, 0, 0, 'm', 0}, file_data[8] = {2, 0, 0, 0, '*', '0', 0};
  struct aiMaterialProperty props[2];
  memset(props, 0, sizeof props);
  strcpy(props[0].mKey.data, "?mat.name");
  props[0].mKey.length = 9;
  props[0].mType = aiPTI_String;
  props[0].mDataLength = 6;
  props[0].mData = name_data;
  strcpy(props[1].mKey.data, "$tex.file");
  props[1].mKey.length = 9;
  props[1].mSemantic = aiTextureType_DIFFUSE;
  props[1].mType = aiPTI_String;
  props[1].mDataLength = 7;
  props[1].mData = file_data;
  struct aiMaterialProperty *pp[2] = {&props[0], &props[1]};
  struct aiMaterial mat;
  memset(&mat, 0, sizeof mat);
  mat.mProperties = pp;
  mat.mNumProperties = mat.mNumAllocated = 2;
  struct aiMaterial *matp = &mat;
  struct aiVector3D uv[3];
  memset(uv, 0, sizeof uv);
  struct aiMesh *mesh = (struct aiMesh *)calloc(1, sizeof *mesh);
  mesh->mNumFaces = 1;
  mesh->mTextureCoords[0] = uv;
  struct aiScene *sc = (struct aiScene *)calloc(1, sizeof *sc);
  sc->mNumMaterials = 1;
  sc->mMaterials = &matp;
  sc->mNumMeshes = 1;
  sc->mMeshes = &mesh;
  sc->mNumTextures = 1;
  sc->mTextures = &texp;
  vx_scene_color col;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_scene_color_build(sc, NULL, "fbx", &col, &e) == VX_OK, "%s", e.msg);
  CHECK(col.color && col.color->texture_count == 1 && col.want_uv);
  if (col.color && col.color->texture_count == 1) {
    const vx_texture *t = &col.color->textures[0];
    CHECK(t->width == 2 && t->height == 1);
    CHECK(t->rgba[0] == rgba(255, 0, 0, 255) && t->rgba[1] == rgba(20, 30, 40, 10));
    /* a transparent texel in a non-glTF diffuse texture: a cut-out */
    const vx_material *mt = &col.color->materials[col.mat_index[0]];
    CHECK(mt->texture == 0 && mt->alpha_mode == VX_ALPHA_MASK && mt->alpha_cutoff == 0.5f);
  }
  vx_scene_color_release(&col);
  free(mesh);
  free(sc);
}

/* ---- the record of the isolated import -------------------------------------------------------- */

typedef struct membuf {
  uint8_t *p;
  size_t n, at, cap;
} membuf;

static int mem_write(void *ctx, const void *p, size_t n) {
  membuf *b = (membuf *)ctx;
  if (b->n + n > b->cap) {
    size_t cap = (b->n + n) * 2;
    uint8_t *g = (uint8_t *)realloc(b->p, cap);
    if (!g) return 2;
    b->p = g;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 0;
}

static int mem_read(void *ctx, void *p, size_t n) {
  membuf *b = (membuf *)ctx;
  if (b->at + n > b->n) return 2;
  memcpy(p, b->p + b->at, n);
  b->at += n;
  return 0;
}

static void record_checked(void) {
  vx_soup m;
  vx_error e;
  write_png("quad.png", 2, 2, 4, quad_px);
  write_text("quad.mtl", "newmtl tex\nKd 0.5 0.5 0.5\nmap_Kd quad.png\n");
  if (vx_soup_import(write_text("quad.obj", quad_obj("quad.mtl", "tex")), &m, &e) != VX_OK ||
      !m.color) {
    CHECK(0);
    return;
  }
  uint8_t sum[VX_COLOR_SUMMARY_BYTES];
  vx_color_summary_put(m.color, sum);
  membuf b = {0};
  CHECK(vx_soup_color_write(m.color, m.tri_count, mem_write, &b) == 0);
  vx_color_summary s;
  CHECK(vx_color_summary_get(sum, &s, &e) == VX_OK);
  vx_soup_color *c = NULL;
  int rc = 0;
  CHECK(vx_soup_color_read(&s, m.tri_count, 0, mem_read, &b, &c, &rc, &e) == VX_OK && c);
  CHECK(b.at == b.n);
  vx_soup copy = m;
  copy.color = c;
  CHECK(same_soup(&m, &copy));
  vx_soup_color_free(c);
  /* every byte of the stream flipped in turn: refused, or read into something within range */
  for (size_t i = 0; i < b.n; i++) {
    b.p[i] ^= 0x80;
    b.at = 0;
    c = NULL;
    vx_status st = vx_soup_color_read(&s, m.tri_count, 0, mem_read, &b, &c, &rc, &e);
    if (st == VX_OK) {
      for (uint64_t t = 0; t < m.tri_count; t++) CHECK(c->material[t] < c->material_count);
      for (uint32_t k = 0; k < c->material_count; k++)
        CHECK(c->materials[k].texture < (int32_t)c->texture_count);
    }
    vx_soup_color_free(c);
    b.p[i] ^= 0x80;
  }
  /* a material index past the table; a truncated stream; a summary that lies */
  size_t mat_at = 16 * s.material_count + 8 * s.texture_count + 4 * (size_t)s.texels;
  b.p[mat_at] = 9;
  b.at = 0;
  CHECK(vx_soup_color_read(&s, m.tri_count, 0, mem_read, &b, &c, &rc, &e) == VX_ERR_FORMAT &&
        c == NULL);
  b.p[mat_at] = 0;
  b.n -= 5;
  b.at = 0;
  CHECK(vx_soup_color_read(&s, m.tri_count, 0, mem_read, &b, &c, &rc, &e) == VX_ERR_FORMAT &&
        rc == 2);
  b.n += 5;
  vx_color_summary big = s;
  big.texels = (uint64_t)1 << 27;
  b.at = 0;
  CHECK(vx_soup_color_read(&big, m.tri_count, (uint64_t)64 << 20, mem_read, &b, &c, &rc, &e) ==
        VX_ERR_LIMIT);
  uint8_t bad[VX_COLOR_SUMMARY_BYTES];
  memcpy(bad, sum, sizeof bad);
  bad[6] = 0x10; /* material_count 2^20 + 1 */
  CHECK(vx_color_summary_get(bad, &s, &e) == VX_ERR_FORMAT);
  free(b.p);
  vx_soup_free(&m);
}

/* ---- the public mesh (include/voxlod/mesh.h) -------------------------------------------------- */

static void mesh_from_arrays_with_vertex_colors(void) {
  const float v[12] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0};
  /* the middle triangle is degenerate: dropped, the colours must still follow their vertices */
  const uint32_t idx[9] = {0, 1, 2, 0, 0, 1, 0, 2, 3};
  const uint8_t col[16] = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 128, 9, 8, 7, 255};
  vx_mesh *m = NULL;
  vx_error e;
  CHECK(vx_mesh_from_arrays(v, 4, idx, 3, &m, &e) == VX_OK && m);
  if (!m) return;
  vx_mesh_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK(vx_mesh_get_info(m, &info) == VX_OK && info.has_color == 0 && info.triangles == 2);
  CHECK(vx_mesh_set_vertex_colors(m, col, 3, 4, &e) == VX_ERR_INVALID_ARG); /* wrong count */
  CHECK(vx_mesh_set_vertex_colors(m, col, 4, 2, &e) == VX_ERR_INVALID_ARG); /* 2 channels */
  CHECK(vx_mesh_set_vertex_colors(m, col, 4, 4, &e) == VX_OK);
  CHECK(vx_mesh_get_info(m, &info) == VX_OK && info.has_color == 1 && info.materials == 1 &&
        info.textures == 0);
  CHECK(strcmp(vx_mesh_notes(m), "") == 0);
  const vx_soup_color *c = m->soup.color;
  CHECK(c && c->corner_rgba && c->material_count == 1);
  if (c && c->corner_rgba) {
    /* an alpha below 255: the material blends */
    CHECK(c->materials[0].alpha_mode == VX_ALPHA_BLEND && c->materials[0].texture == -1);
    const uint32_t want[6] = {rgba(255, 0, 0, 255), rgba(0, 255, 0, 255), rgba(0, 0, 255, 128),
                              rgba(255, 0, 0, 255), rgba(0, 0, 255, 128), rgba(9, 8, 7, 255)};
    CHECK(m->soup.tri_count == 2 && memcmp(c->corner_rgba, want, sizeof want) == 0);
  }
  /* RGB over it: replaced, opaque */
  const uint8_t rgb[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  CHECK(vx_mesh_set_vertex_colors(m, rgb, 4, 3, &e) == VX_OK);
  c = m->soup.color;
  CHECK(c && c->materials[0].alpha_mode == VX_ALPHA_OPAQUE && c->corner_rgba[5] == rgba(10, 11, 12, 255));
  vx_mesh_free(m);
  /* a soup (no indices) that drops its first triangle */
  const float sv[18] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};
  uint8_t sc[18];
  for (int i = 0; i < 18; i++) sc[i] = (uint8_t)(10 * i);
  CHECK(vx_mesh_from_arrays(sv, 6, NULL, 2, &m, &e) == VX_OK && m);
  if (!m) return;
  CHECK(vx_mesh_set_vertex_colors(m, sc, 6, 3, &e) == VX_OK);
  c = m->soup.color;
  CHECK(m->soup.tri_count == 1 && c && c->corner_rgba[0] == rgba(90, 100, 110, 255) &&
        c->corner_rgba[2] == rgba(150, 160, 170, 255));
  vx_mesh_free(m);
}

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
  RUN(lying_and_truncated_textures);
  RUN(jpeg_huffman_overflow_refused);
  RUN(texture_paths_that_are_not_images);
  RUN(nonfinite_and_huge_uvs);
  RUN(embedded_raw_texels);
  RUN(record_checked);
  RUN(mesh_from_arrays_with_vertex_colors);
  RUN(mesh_load_notes_and_info);
  RUN(material_table_capped);
  RUN(a_million_materials_in_a_file);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return check_summary();
}
