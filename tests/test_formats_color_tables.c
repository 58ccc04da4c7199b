/* SPDX-License-Identifier: Apache-2.0 */
/* test_formats_color_tables.c - the colour tables of the import without files: the record the
 * import child sends its parent (formats/color_record.h: a round trip bit for bit, every byte of it
 * flipped in turn, indices past the tables, a short stream, sizes past the memory bound), the
 * material table built from scenes made here (10^6 materials: duplicates merged, more than 65536
 * distinct ones a clear error), raw embedded texels, JPEG textures (decoded as Pillow decodes them;
 * damaged, truncated and hostile ones refused), vx_soup_append_color, and the vertex colours of
 * meshes from arrays (vx_mesh_set_vertex_colors: the colours follow their vertices past dropped
 * triangles). */
#define _POSIX_C_SOURCE 200809L
#include "formats/color_record.h"
#include "formats/mesh_material.h"
#include "formats/texture.h"
#include "lib/internal.h"
#include "svo/color.h"
#include "check.h"

#include <assimp/material.h>
#include <assimp/scene.h>
#include <stdint.h>

#include "stb_write.h"

static uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a) {
  return r | g << 8 | b << 16 | a << 24;
}

/* 2x2 texels, rows top first: red green / blue white */
static const uint8_t quad_px[16] = {255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 255, 255, 255};

static int same_color(const vx_soup_color *x, const vx_soup_color *y, uint64_t n) {
  if (x->material_count != y->material_count || x->texture_count != y->texture_count) return 0;
  if (memcmp(x->materials, y->materials, x->material_count * sizeof(vx_material))) return 0;
  for (uint32_t i = 0; i < x->texture_count; i++)
    if (x->textures[i].width != y->textures[i].width ||
        x->textures[i].height != y->textures[i].height ||
        memcmp(x->textures[i].rgba, y->textures[i].rgba,
               (size_t)x->textures[i].width * x->textures[i].height * 4))
      return 0;
  if (memcmp(x->material, y->material, (size_t)n * 4)) return 0;
  if (!x->uv != !y->uv || (x->uv && memcmp(x->uv, y->uv, (size_t)n * 24))) return 0;
  if (!x->corner_rgba != !y->corner_rgba ||
      (x->corner_rgba && memcmp(x->corner_rgba, y->corner_rgba, (size_t)n * 12)))
    return 0;
  return !x->warnings == !y->warnings && (!x->warnings || !strcmp(x->warnings, y->warnings));
}

/* vx_soup_append_color keeps and drops what vx_soup_append does, attributes in step; arrays made
 * on first use are back-filled; a material past the table is refused. */
static void append_color_in_step(void) {
  vx_soup m;
  memset(&m, 0, sizeof m);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  c->materials = (vx_material *)vx_calloc(2, sizeof(vx_material));
  c->material_count = 2;
  m.color = c;
  const float pos[27] = {0, 0, 0, 1, 0, 0, 0, 1, 0,   /* kept */
                         0, 0, 0, 0, 0, 0, 1, 1, 1,   /* degenerate */
                         0, 0, 0, 1, 0, 0, 0, 0, 1};  /* kept */
  const uint32_t mat[3] = {1, 0, 1}, bad[1] = {2};
  const float uv[18] = {1, 2, 3, 4, 5, 6, 9, 9, 9, 9, 9, 9, NAN, 8, 7, 6, 5, 4};
  vx_error e;
  CHECK(vx_soup_append_color(&m, pos, mat, NULL, NULL, 1, &e) == VX_OK);
  CHECK(vx_soup_append_color(&m, pos, bad, NULL, NULL, 1, &e) == VX_ERR_INVALID_ARG);
  CHECK(vx_soup_append_color(&m, pos, mat, uv, NULL, 3, &e) == VX_OK);
  CHECK(m.tri_count == 3 && m.skipped_degenerate == 1);
  CHECK(c->material[0] == 1 && c->material[1] == 1 && c->material[2] == 1);
  CHECK(c->uv && c->uv[0] == 0 && c->uv[6] == 1 && c->uv[11] == 6 && c->uv[12] == 0 &&
        c->uv[13] == 8);
  CHECK(c->corner_rgba == NULL);
  CHECK(vx_soup_append(&m, pos, 1, &e) == VX_OK && m.tri_count == 4 && c->material[3] == 0);
  vx_soup_free(&m);
}

/* A JPEG whose Huffman table counts sum past 256 (stb_image 2.27, which decoded JPEG textures
 * before, wrote past its table: found by fuzz_texture), after fill bytes: refused. A PNG whose
 * bytes happen to hold the same pattern still decodes. */
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

static uint8_t *read_all(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *b = (uint8_t *)malloc(1 << 16);
  if (b) *n = fread(b, 1, 1 << 16, f);
  fclose(f);
  return b;
}

/* The JPEGs of tests/corpus/texture made by tests/data/textures/make_textures.py (baseline 4:2:0
 * RGB, progressive greyscale, Adobe CMYK) decode to what Pillow decodes them to (its PPM beside
 * the script), within 2 codes a channel (two builds of libjpeg-turbo), opaque. */
static void jpeg_decodes_like_pillow(void) {
  const char *names[3] = {"rgb12x10", "grey9x7_progressive", "cmyk8x8"};
  const uint32_t sides[3][2] = {{12, 10}, {9, 7}, {8, 8}};
  for (int i = 0; i < 3; i++) {
    char path[1024];
    size_t jn = 0, pn = 0;
    snprintf(path, sizeof path, "%s/%s.jpg", VX_TEXTURE_CORPUS, names[i]);
    uint8_t *jpg = read_all(path, &jn);
    snprintf(path, sizeof path, "%s/%s.ppm", VX_TEXTURE_REFS, names[i]);
    uint8_t *ppm = read_all(path, &pn);
    unsigned pw = 0, ph = 0;
    int head = 0;
    CHECK_MSG(jpg && ppm && sscanf((const char *)ppm, "P6 %u %u 255%n", &pw, &ph, &head) == 2 &&
                  head > 0 && pw == sides[i][0] && ph == sides[i][1] &&
                  pn == (size_t)head + 1 + 3 * (size_t)pw * ph,
              "%s: inputs", names[i]);
    vx_texture t;
    vx_error e;
    int alpha = 1;
    memset(&e, 0, sizeof e);
    if (jpg && ppm && pw && vx_texture_decode(jpg, jn, 0, &t, &alpha, &e) == VX_OK) {
      CHECK_MSG(t.width == pw && t.height == ph && alpha == 0, "%s: %ux%u", names[i], t.width,
                t.height);
      const uint8_t *ref = ppm + head + 1;
      int worst = 0;
      for (size_t k = 0; t.width == pw && t.height == ph && k < (size_t)pw * ph; k++) {
        for (int c = 0; c < 3; c++) {
          int d = abs((int)(t.rgba[k] >> (8 * c) & 255) - (int)ref[3 * k + (size_t)c]);
          worst = d > worst ? d : worst;
        }
        CHECK(t.rgba[k] >> 24 == 255);
      }
      fprintf(stderr, "  %s: largest difference from Pillow %d\n", names[i], worst);
      CHECK_MSG(worst <= 2, "%s: %d codes from Pillow's decode", names[i], worst);
      vx_free(t.rgba);
    } else {
      CHECK_MSG(0, "%s: %s", names[i], e.msg);
    }
    free(jpg);
    free(ppm);
  }
}

/* Damaged JPEGs are refused with a clear error and nothing decoded: the input with which
 * fuzz_texture found stb_image 2.27's Huffman decode reading past its 256-entry table (a
 * decoder that is no longer built in), and a valid JPEG cut short (libjpeg-turbo would finish it
 * grey, with only a warning). A header claiming more texels than a texture may have, or more
 * memory than is left, is refused before decoding, as for every format. */
static void jpeg_damaged_refused(void) {
  char path[1024];
  size_t n = 0;
  vx_texture t;
  vx_error e;
  snprintf(path, sizeof path, "%s/jpeg_huff_decode_oob.jpg", VX_TEXTURE_CORPUS);
  uint8_t *b = read_all(path, &n);
  CHECK(b && n == 686);
  memset(&e, 0, sizeof e);
  if (b) {
    CHECK(vx_texture_decode(b, n, 0, &t, NULL, &e) == VX_ERR_FORMAT && t.rgba == NULL &&
          strncmp(e.msg, "damaged image (", 15) == 0);
    fprintf(stderr, "  fuzz input: %s\n", e.msg);
  }
  free(b);
  snprintf(path, sizeof path, "%s/rgb12x10.jpg", VX_TEXTURE_CORPUS);
  b = read_all(path, &n);
  CHECK(b && n > 400);
  if (!b) return;
  size_t sos = 0;
  for (size_t k = 2; k + 1 < n && !sos; k++)
    if (b[k] == 0xff && b[k + 1] == 0xda) sos = k;
  CHECK(sos > 200 && sos + 40 < n);
  const size_t cuts[3] = {n - 2, sos + (n - sos) / 2, 200}; /* no EOI; in the scan; in the tables */
  for (int i = 0; i < 3; i++) {
    memset(&e, 0, sizeof e);
    CHECK_MSG(vx_texture_decode(b, cuts[i], 0, &t, NULL, &e) == VX_ERR_FORMAT && t.rgba == NULL &&
                  strncmp(e.msg, "damaged image (", 15) == 0,
              "cut at %zu: %s", cuts[i], e.msg);
    fprintf(stderr, "  cut at %zu: %s\n", cuts[i], e.msg);
  }
  /* the same file, its SOF saying 40000 x 10 (over 2^28 texels: 40000 x 40000) */
  uint8_t *big = (uint8_t *)malloc(n);
  memcpy(big, b, n);
  size_t sof = 0;
  for (size_t k = 2; k + 9 < n && !sof; k++)
    if (big[k] == 0xff && big[k + 1] == 0xc0) sof = k;
  CHECK(sof > 0);
  if (sof) {
    big[sof + 5] = 0x9c, big[sof + 6] = 0x40, big[sof + 7] = 0x9c, big[sof + 8] = 0x40;
    memset(&e, 0, sizeof e);
    CHECK_MSG(vx_texture_decode(big, n, 0, &t, NULL, &e) == VX_ERR_LIMIT && t.rgba == NULL &&
                  strstr(e.msg, "40000x40000"), "%s", e.msg);
  }
  /* 12 x 10 texels in 1 KiB of memory left */
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_texture_decode(b, n, 1024, &t, NULL, &e) == VX_ERR_LIMIT && t.rgba == NULL &&
                strstr(e.msg, "memory left"), "%s", e.msg);
  free(big);
  free(b);
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

/* A soup of two triangles with a 2x2 texture, two materials, UVs, corner colours and a warning,
 * made here. */
static void make_colored(vx_soup *m) {
  static const float pos[18] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0};
  static const uint32_t mat[2] = {0, 1};
  static const float uv[12] = {0, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1};
  static const uint32_t corners[6] = {1, 2, 3, 4, 5, 6};
  memset(m, 0, sizeof *m);
  vx_soup_color *c = (vx_soup_color *)vx_calloc(1, sizeof *c);
  c->materials = (vx_material *)vx_calloc(2, sizeof(vx_material));
  c->material_count = 2;
  c->materials[0] = (vx_material){0xffffffffu, 0, VX_ALPHA_MASK, 0.25f};
  c->materials[1] = (vx_material){rgba(0, 0, 255, 128), -1, VX_ALPHA_BLEND, 0.5f};
  c->textures = (vx_texture *)vx_calloc(1, sizeof(vx_texture));
  c->texture_count = 1;
  c->textures[0].width = c->textures[0].height = 2;
  c->textures[0].rgba = (uint32_t *)vx_malloc(16);
  memcpy(c->textures[0].rgba, quad_px, 16);
  const char *w = "texture 'x.png' of material 'm': not found\n";
  c->warnings = (char *)vx_malloc(strlen(w) + 1);
  strcpy(c->warnings, w);
  m->color = c;
  vx_error e;
  CHECK(vx_soup_append_color(m, pos, mat, uv, corners, 2, &e) == VX_OK && m->tri_count == 2);
}

static void record_checked(void) {
  vx_soup m;
  vx_error e;
  make_colored(&m);
  if (!m.color || m.tri_count != 2) return;
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
  CHECK(c && same_color(m.color, c, m.tri_count));
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
  b.p[mat_at] = 2; /* of 2 materials */
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

int main(void) {
  RUN(append_color_in_step);
  RUN(jpeg_huffman_overflow_refused);
  RUN(jpeg_decodes_like_pillow);
  RUN(jpeg_damaged_refused);
  RUN(embedded_raw_texels);
  RUN(record_checked);
  RUN(material_table_capped);
  RUN(mesh_from_arrays_with_vertex_colors);
  return check_summary();
}
