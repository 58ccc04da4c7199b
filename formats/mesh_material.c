/* SPDX-License-Identifier: Apache-2.0 */
/* mesh_material.c - an assimp scene's materials and textures -> the colour tables of a soup
 * (mesh_material.h, svo/soup.h).
 *
 * Per assimp material, two soup materials: one for meshes with UV channel 0 (the base-colour or
 * else the diffuse texture applies) and one for meshes without (no texture can). Identical soup
 * materials are merged; more than VX_COLOR_MAX_MATERIALS distinct ones is an error. Colours:
 *  - glTF: the base colour factor (linear) multiplies the texture; alphaMode MASK (with
 *    alphaCutoff) and BLEND as the file says; a vertex colour is multiplied by the factor;
 *  - other formats: the diffuse colour (taken as linear, as DCC tools do) is the colour of an
 *    untextured material; a textured one shows its texture as it is (OBJ exporters write the
 *    texture's mean colour as Kd beside map_Kd: multiplying would darken it twice). An opacity
 *    map (OBJ map_d) multiplies the texture's alpha, and it or an RGBA texture with transparent
 *    texels makes the material a cut-out (mask at 0.5); an opacity below 1 makes it BLEND with
 *    that alpha, as do vertex colours with an alpha below 1 (on meshes without a texture).
 *    Vertex colours are sRGB-encoded, as PLY scans store them.
 * glTF's KHR_texture_transform on the base-colour texture becomes an affine map of the UVs of
 * the meshes using that material (uv_transform below, applied by mesh_import.c); other formats'
 * UV transforms are not applied (a warning).
 * A scene with no texture, no vertex colour and only the material assimp adds when a file has none
 * ("DefaultMaterial", or an unnamed one) has no colour.
 *
 * Texture images are cached by the name the material gives (at most MAX_IMAGES distinct names,
 * looked up through a hash table, so 10^6 materials cost linear time); each is decoded once,
 * under the memory the process has left (texture.h). A texture that cannot be found, read or
 * decoded is a warning naming it, and the material's colour is used.
 */
#define _POSIX_C_SOURCE 200809L
#include "formats/mesh_material.h"
#include "formats/color_record.h"
#include "formats/texture.h"
#include "svo/color.h"

#include <assimp/material.h>
#include <assimp/scene.h>
#include <assimp/texture.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IMAGES 4096u
#define IMAGE_SLOTS 8192u      /* power of two, >= 2 * MAX_IMAGES */
#define MAX_COMBOS 4096u
#define COMBO_SLOTS 8192u
#define MAT_SLOTS 131072u      /* power of two, >= 2 * VX_COLOR_MAX_MATERIALS */
#define WARN_BYTES 8192u
#define WARN_LINES 32u
#define NAME_CHARS 80u

typedef struct image {
  char *ref;       /* the name the material gives */
  uint64_t hash;
  int ok, has_alpha, owned;
  vx_texture img;  /* owned until given to the soup as it is */
  int32_t soup;    /* its index in the soup's textures when used as it is, else -1 */
  char *path;      /* the file found (external textures), or NULL */
  int32_t alias;   /* another name of a file decoded already: that image; else -1 */
} image;

typedef struct combo {
  int32_t d, o, soup; /* diffuse and opacity image (-1: none) -> soup texture (-1: failed) */
} combo;

typedef struct builder {
  const struct aiScene *sc;
  const char *dir; /* NULL: no external textures */
  int gltf;
  image *img;
  uint32_t nimg;
  int32_t islot[IMAGE_SLOTS];
  combo combos[MAX_COMBOS];
  uint32_t ncombos;
  int32_t cslot[COMBO_SLOTS];
  vx_soup_color *c;
  uint32_t cap_tex;
  int32_t *mslot;  /* MAT_SLOTS */
  char warn[WARN_BYTES];
  size_t wlen;
  uint32_t wlines, wmore;
  int full_warned;
} builder;

static void warn(builder *b, const char *fmt, ...) {
  if (b->wlines >= WARN_LINES) {
    b->wmore++;
    return;
  }
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t n = strlen(line);
  if (b->wlen + n + 2 > WARN_BYTES - 64) { /* room kept for the count of the rest */
    b->wmore++;
    return;
  }
  for (size_t i = 0; i < n; i++) { /* plain text: names are cleaned already, messages too */
    unsigned char ch = (unsigned char)line[i];
    b->warn[b->wlen++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
  }
  b->warn[b->wlen++] = '\n';
  b->warn[b->wlen] = 0;
  b->wlines++;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *s = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * UINT64_C(1099511628211);
  return h;
}

static float clamp01(float v) { return v >= 0.0f ? (v <= 1.0f ? v : 1.0f) : 0.0f; /* NaN: 0 */ }

static void ai_str(const struct aiString *s, char *out, size_t cap) {
  size_t n = s->length < cap - 1 ? s->length : cap - 1;
  if (n > sizeof s->data - 1) n = sizeof s->data - 1;
  memcpy(out, s->data, n);
  out[n] = 0;
  out[strnlen(out, n)] = 0;
}

static void material_name(const struct aiMaterial *m, char *out, size_t cap) {
  struct aiString s;
  char raw[1024];
  if (aiGetMaterialString(m, AI_MATKEY_NAME, &s) == aiReturn_SUCCESS) ai_str(&s, raw, sizeof raw);
  else raw[0] = 0;
  vx_texture_display_name(raw, 40, out, cap);
}

static int get_color(const struct aiMaterial *m, const char *key, unsigned type, unsigned idx,
                     float out[4]) {
  struct aiColor4D c;
  if (aiGetMaterialColor(m, key, type, idx, &c) != aiReturn_SUCCESS) return 0;
  out[0] = clamp01(c.r);
  out[1] = clamp01(c.g);
  out[2] = clamp01(c.b);
  out[3] = clamp01(c.a);
  return 1;
}

static int get_float(const struct aiMaterial *m, const char *key, unsigned type, unsigned idx,
                     float *out) {
  ai_real v;
  unsigned one = 1;
  if (aiGetMaterialFloatArray(m, key, type, idx, &v, &one) != aiReturn_SUCCESS || one < 1) return 0;
  *out = (float)v;
  return 1;
}

/* The name of the material's first texture of that type, or 0. */
static int texture_ref(const struct aiMaterial *m, enum aiTextureType type, char *out, size_t cap) {
  if (aiGetMaterialTextureCount(m, type) == 0) return 0;
  struct aiString s;
  if (aiGetMaterialTexture(m, type, 0, &s, NULL, NULL, NULL, NULL, NULL, NULL) != aiReturn_SUCCESS)
    return 0;
  ai_str(&s, out, cap);
  return out[0] != 0;
}

/* ---- images ----------------------------------------------------------------------------------- */

/* An embedded texture: "*N", or one whose file name the reference ends with (FBX). */
static const struct aiTexture *embedded(const struct aiScene *sc, const char *ref) {
  if (!sc->mTextures || sc->mNumTextures == 0) return NULL;
  if (ref[0] == '*') {
    char *end;
    unsigned long n = strtoul(ref + 1, &end, 10);
    if (end != ref + 1 && *end == 0 && n < sc->mNumTextures) return sc->mTextures[n];
    return NULL;
  }
  const char *base = ref;
  for (const char *p = ref; *p; p++)
    if (*p == '/' || *p == '\\') base = p + 1;
  for (unsigned i = 0; i < sc->mNumTextures && i < 65536; i++) {
    const struct aiTexture *t = sc->mTextures[i];
    if (!t) continue;
    char fn[1024];
    ai_str(&t->mFilename, fn, sizeof fn);
    const char *fb = fn;
    for (const char *p = fn; *p; p++)
      if (*p == '/' || *p == '\\') fb = p + 1;
    if (fn[0] && (strcmp(fn, ref) == 0 || (*fb && strcmp(fb, base) == 0))) return t;
  }
  return NULL;
}

static vx_status decode_embedded(const struct aiTexture *t, image *im, vx_error *e) {
  if (!t->pcData) return vx_error_set(e, VX_ERR_FORMAT, "embedded texture without data");
  if (t->mHeight == 0) /* compressed: mWidth bytes of a PNG, JPEG, ... */
    return vx_texture_decode(t->pcData, t->mWidth, vx_memory_headroom(), &im->img, &im->has_alpha,
                             e);
  uint64_t n = (uint64_t)t->mWidth * t->mHeight;
  if (t->mWidth == 0 || n > VX_TEXTURE_MAX_TEXELS)
    return vx_error_set(e, VX_ERR_LIMIT, "embedded texture of %ux%u texels", t->mWidth, t->mHeight);
  uint64_t room = vx_memory_headroom();
  if (room && n * 4 > room)
    return vx_error_set(e, VX_ERR_LIMIT, "%ux%u texels: more than the memory left", t->mWidth,
                        t->mHeight);
  uint32_t *px = (uint32_t *)vx_malloc((size_t)n * 4);
  if (!px) return vx_error_set(e, VX_ERR_NOMEM, "out of memory");
  int alpha = 0;
  for (uint64_t i = 0; i < n; i++) {
    const struct aiTexel *x = &t->pcData[i];
    px[i] = (uint32_t)x->r | (uint32_t)x->g << 8 | (uint32_t)x->b << 16 | (uint32_t)x->a << 24;
    alpha |= x->a != 255;
  }
  im->img.width = t->mWidth;
  im->img.height = t->mHeight;
  im->img.rgba = px;
  im->has_alpha = alpha;
  return VX_OK;
}

static void load_image(builder *b, image *im, uint32_t self, const char *matname) {
  char shown[NAME_CHARS + 8];
  vx_texture_display_name(im->ref, NAME_CHARS, shown, sizeof shown);
  vx_error e;
  memset(&e, 0, sizeof e);
  vx_status s;
  const struct aiTexture *t = embedded(b->sc, im->ref);
  if (t) {
    s = decode_embedded(t, im, &e);
  } else if (im->ref[0] == '*') {
    s = vx_error_set(&e, VX_ERR_FORMAT, "no such embedded texture");
  } else if (!b->dir) {
    s = vx_error_set(&e, VX_ERR_IO, "external textures are not read for a mesh from memory");
  } else {
    char path[4096];
    if (!vx_texture_resolve(b->dir, im->ref, path, sizeof path)) {
      s = vx_error_set(&e, VX_ERR_IO, "not found beside the mesh");
    } else {
      /* the same file under another name ("a.png", "A.PNG", "maps\\a.png"): decoded once */
      for (uint32_t i = 0; i < self; i++)
        if (b->img[i].path && b->img[i].alias < 0 && strcmp(b->img[i].path, path) == 0) {
          im->alias = (int32_t)i;
          return;
        }
      size_t pl = strlen(path);
      im->path = (char *)vx_malloc(pl + 1);
      if (im->path) memcpy(im->path, path, pl + 1);
      uint8_t *data;
      size_t size;
      uint64_t room = vx_memory_headroom();
      uint64_t cap = room && room / 2 < VX_TEXTURE_MAX_FILE ? room / 2 : VX_TEXTURE_MAX_FILE;
      s = vx_texture_read_file(path, cap, &data, &size, &e);
      if (s == VX_OK) {
        s = vx_texture_decode(data, size, vx_memory_headroom(), &im->img, &im->has_alpha, &e);
        vx_free(data);
      }
    }
  }
  if (s == VX_OK) {
    im->ok = 1;
    im->owned = 1;
    return;
  }
  /* the reason without the location vx_error_set may append */
  char why[200];
  vx_texture_display_name(e.msg, 150, why, sizeof why);
  char *at = strrchr(why, '(');
  if (at && at > why && at[-1] == ' ' && strstr(at, ".c:")) at[-1] = 0;
  warn(b, "texture '%s' of material '%s': %s; the material's colour is used", shown, matname, why);
}

/* The image a reference names (decoded on first use), or -1 past MAX_IMAGES. */
static int32_t image_for(builder *b, const char *ref, const char *matname) {
  size_t n = strlen(ref);
  uint64_t h = fnv(ref, n, UINT64_C(1469598103934665603));
  uint32_t slot = (uint32_t)h & (IMAGE_SLOTS - 1);
  while (b->islot[slot] >= 0) {
    image *im = &b->img[b->islot[slot]];
    if (im->hash == h && strcmp(im->ref, ref) == 0) return im->alias >= 0 ? im->alias : b->islot[slot];
    slot = (slot + 1) & (IMAGE_SLOTS - 1);
  }
  if (b->nimg >= MAX_IMAGES) {
    if (!b->full_warned)
      warn(b, "more than %u texture files: the materials past them use their colours", MAX_IMAGES);
    b->full_warned = 1;
    return -1;
  }
  image *im = &b->img[b->nimg];
  memset(im, 0, sizeof *im);
  im->soup = -1;
  im->alias = -1;
  im->hash = h;
  im->ref = (char *)vx_malloc(n + 1);
  if (!im->ref) return -1;
  memcpy(im->ref, ref, n + 1);
  b->islot[slot] = (int32_t)b->nimg++;
  load_image(b, im, b->nimg - 1, matname);
  return im->alias >= 0 ? im->alias : b->islot[slot];
}

static int32_t add_texture(builder *b, vx_texture t) {
  vx_soup_color *c = b->c;
  if (c->texture_count >= VX_COLOR_MAX_TEXTURES) return -1;
  if (c->texture_count == b->cap_tex) {
    uint32_t cap = b->cap_tex ? 2 * b->cap_tex : 16;
    vx_texture *g = (vx_texture *)vx_realloc(c->textures, cap * sizeof *g);
    if (!g) return -1;
    c->textures = g;
    b->cap_tex = cap;
  }
  c->textures[c->texture_count] = t;
  return (int32_t)c->texture_count++;
}

/* The soup texture of diffuse image d with opacity image o multiplied into its alpha (either -1:
 * none; both -1 or both failed: -1). *cutout: the texture has transparent texels. */
static int32_t texture_for(builder *b, int32_t d, int32_t o, int *cutout) {
  image *di = d >= 0 && b->img[d].ok ? &b->img[d] : NULL;
  image *oi = o >= 0 && b->img[o].ok ? &b->img[o] : NULL;
  *cutout = 0;
  if (!di && !oi) return -1;
  if (!oi) {
    *cutout = di->has_alpha;
    if (di->soup < 0) {
      di->soup = add_texture(b, di->img);
      if (di->soup >= 0) di->owned = 0;
    }
    return di->soup;
  }
  *cutout = 1;
  uint64_t key = (uint64_t)(uint32_t)(d + 1) << 32 | (uint32_t)(o + 1);
  uint32_t slot = (uint32_t)fnv(&key, sizeof key, UINT64_C(1469598103934665603)) & (COMBO_SLOTS - 1);
  while (b->cslot[slot] >= 0) {
    combo *k = &b->combos[b->cslot[slot]];
    if (k->d == d && k->o == o) return k->soup;
    slot = (slot + 1) & (COMBO_SLOTS - 1);
  }
  if (b->ncombos >= MAX_COMBOS) return di ? texture_for(b, d, -1, cutout) : -1;
  /* the result has the diffuse image's size (the opacity image's without one); the opacity is
   * its alpha where it has one, else its red channel (a grey map), sampled at the nearest texel */
  uint32_t w = di ? di->img.width : oi->img.width, h = di ? di->img.height : oi->img.height;
  uint64_t n = (uint64_t)w * h;
  uint64_t room = vx_memory_headroom();
  uint32_t *px = room && n * 4 > room ? NULL : (uint32_t *)vx_malloc((size_t)n * 4);
  int32_t idx = -1;
  if (px) {
    for (uint32_t y = 0; y < h; y++) {
      uint32_t oy = (uint32_t)((uint64_t)y * oi->img.height / h);
      for (uint32_t x = 0; x < w; x++) {
        uint32_t ox = (uint32_t)((uint64_t)x * oi->img.width / w);
        uint32_t ov = oi->img.rgba[(uint64_t)oy * oi->img.width + ox];
        uint32_t op = oi->has_alpha ? ov >> 24 : ov & 255u;
        uint32_t base = di ? di->img.rgba[(uint64_t)y * w + x] : 0xffffffffu;
        uint32_t a = ((base >> 24) * op + 127u) / 255u;
        px[(uint64_t)y * w + x] = (base & 0x00ffffffu) | a << 24;
      }
    }
    vx_texture t = {w, h, px};
    idx = add_texture(b, t);
    if (idx < 0) vx_free(px);
  }
  combo *k = &b->combos[b->ncombos];
  k->d = d;
  k->o = o;
  k->soup = idx;
  b->cslot[slot] = (int32_t)b->ncombos++;
  return idx;
}

/* ---- UV transforms --------------------------------------------------------------------------- */

/* Past this a coefficient of a UV transform leaves float UVs no fraction to pick a texel with. */
#define UV_XFORM_MAX 16777216.0

/* The UV transform of material m's texture of that type as the affine map of
 * vx_scene_color.uv_xform (the soup's UVs: v up); 0 when there is none, it is the identity, or it
 * is not applied (a warning says which).
 * glTF (KHR_texture_transform: offset o, rotation r, scale s): assimp's glTF2 importer (5.x) keeps
 * s, stores -r, and folds its own pivot and V flip into the translation,
 *   t = (s_u / 2 (1 - cos r + sin r) + o_u, s_v / 2 (sin r + cos r - 1) + 1 - s_v - o_v),
 * a translation that composes with neither the extension nor assimp's own TransformUVCoords step
 * once r != 0. So o is recovered from t and the extension applied as glTF viewers do (the spec's
 * example, Khronos' sample viewer, three.js, Cesium): in glTF's UVs (v down)
 *   uv' = o + [cos r, sin r; -sin r, cos r] (s_u u, s_v v),
 * then assimp's flip v -> 1 - v, which the mesh's UVs have had already. (The extension's GLSL
 * mat3 literal, read by columns as GLSL does, would turn the other way and contradict its own
 * example: offset [0, 1], rotation pi/2, scale [0.5, 0.5] shows the lower-left quadrant.)
 * Other formats: assimp's OBJ reader skips map_Kd -o/-s; other readers' transforms follow
 * conventions of their own and are not applied. */
static int uv_transform(builder *b, const struct aiMaterial *m, enum aiTextureType type,
                        const char *matname, double out[6]) {
  struct aiUVTransform x;
  if (aiGetMaterialUVTransform(m, _AI_MATKEY_UVTRANSFORM_BASE, (unsigned)type, 0, &x) !=
      aiReturn_SUCCESS)
    return 0;
  const double tu = x.mTranslation.x, tv = x.mTranslation.y, su = x.mScaling.x,
               sv = x.mScaling.y, rot = x.mRotation;
  if (!isfinite(tu) || !isfinite(tv) || !isfinite(su) || !isfinite(sv) || !isfinite(rot)) {
    warn(b, "material '%s': a UV transform with non-finite values is ignored", matname);
    return 0;
  }
  if (tu == 0.0 && tv == 0.0 && su == 1.0 && sv == 1.0 && rot == 0.0) return 0;
  if (!b->gltf) {
    warn(b, "material '%s': its texture's UV transform is not applied (only glTF's are)",
         matname);
    return 0;
  }
  const double r = -rot, c = cos(r), s = sin(r);
  const double ou = tu - 0.5 * su * (1.0 - c + s), ov = 0.5 * sv * (s + c - 1.0) + 1.0 - sv - tv;
  /* with u = a_u, v = 1 - a_v for the soup's (a_u, a_v), and a'_v = 1 - v' */
  out[0] = c * su;
  out[1] = -s * sv;
  out[2] = s * sv + ou;
  out[3] = s * su;
  out[4] = c * sv;
  out[5] = 1.0 - c * sv - ov;
  for (int k = 0; k < 6; k++)
    if (!(fabs(out[k]) <= UV_XFORM_MAX)) {
      warn(b, "material '%s': a UV transform beyond %g is ignored", matname, UV_XFORM_MAX);
      return 0;
    }
  return 1;
}

/* ---- materials -------------------------------------------------------------------------------- */

/* The index of a soup material equal to m (added when new); -1 past the cap, -2 out of memory. */
static int64_t soup_material(builder *b, const vx_material *m) {
  uint64_t h = fnv(&m->factor, 4, UINT64_C(1469598103934665603));
  h = fnv(&m->texture, 4, h);
  h = fnv(&m->alpha_mode, 4, h);
  h = fnv(&m->alpha_cutoff, 4, h);
  uint32_t slot = (uint32_t)h & (MAT_SLOTS - 1);
  vx_soup_color *c = b->c;
  while (b->mslot[slot] >= 0) {
    const vx_material *x = &c->materials[b->mslot[slot]];
    if (x->factor == m->factor && x->texture == m->texture && x->alpha_mode == m->alpha_mode &&
        x->alpha_cutoff == m->alpha_cutoff)
      return b->mslot[slot];
    slot = (slot + 1) & (MAT_SLOTS - 1);
  }
  if (c->material_count >= VX_COLOR_MAX_MATERIALS) return -1;
  c->materials[c->material_count] = *m;
  b->mslot[slot] = (int32_t)c->material_count;
  return c->material_count++;
}

static uint32_t pack(const float v[4]) {
  return vx_rgba_pack_linear(v[0], v[1], v[2], v[3]);
}

/* Is material i the one assimp adds when a file has none (and names none)? */
static int is_default_material(const struct aiScene *sc, unsigned i, int gltf) {
  const struct aiMaterial *m = sc->mMaterials[i];
  char ref[8];
  if (texture_ref(m, aiTextureType_BASE_COLOR, ref, sizeof ref) ||
      texture_ref(m, aiTextureType_DIFFUSE, ref, sizeof ref) ||
      texture_ref(m, aiTextureType_OPACITY, ref, sizeof ref))
    return 0;
  struct aiString s;
  char name[64];
  if (aiGetMaterialString(m, AI_MATKEY_NAME, &s) == aiReturn_SUCCESS) ai_str(&s, name, sizeof name);
  else name[0] = 0;
  if (strcmp(name, AI_DEFAULT_MATERIAL_NAME) == 0) return 1;
  /* glTF: assimp appends an unnamed white material for primitives that name none; the PLY and
   * OFF readers add an unnamed one to every file */
  return name[0] == 0 && (!gltf || i + 1 == sc->mNumMaterials);
}

static vx_status build_material(builder *b, unsigned i, int with_uv, int without_uv,
                                int vertex_alpha, vx_scene_color *out, vx_error *err) {
  const struct aiMaterial *m = b->sc->mMaterials[i];
  char matname[48];
  material_name(m, matname, sizeof matname);
  float col[4] = {0.6f, 0.6f, 0.6f, 1.0f};
  if (!get_color(m, AI_MATKEY_BASE_COLOR, col)) get_color(m, AI_MATKEY_COLOR_DIFFUSE, col);
  vx_material plain = {0, -1, VX_ALPHA_OPAQUE, 0.5f}, tex;
  float opacity = 1.0f;
  if (b->gltf) {
    struct aiString mode;
    char ms[16] = "";
    if (aiGetMaterialString(m, "$mat.gltf.alphaMode", 0, 0, &mode) == aiReturn_SUCCESS)
      ai_str(&mode, ms, sizeof ms);
    float cut = 0.5f;
    if (get_float(m, "$mat.gltf.alphaCutoff", 0, 0, &cut)) cut = clamp01(cut);
    if (strcmp(ms, "MASK") == 0) {
      plain.alpha_mode = VX_ALPHA_MASK;
      plain.alpha_cutoff = cut;
    } else if (strcmp(ms, "BLEND") == 0) {
      plain.alpha_mode = VX_ALPHA_BLEND;
    }
  } else {
    if (get_float(m, AI_MATKEY_OPACITY, &opacity)) opacity = clamp01(opacity);
    else opacity = 1.0f;
    col[3] = opacity;
    if (opacity < 1.0f || vertex_alpha) plain.alpha_mode = VX_ALPHA_BLEND;
  }
  plain.factor = pack(col);
  tex = plain;
  if (with_uv) {
    char ref[1024];
    int32_t d = -1, o = -1;
    enum aiTextureType dtype = aiTextureType_BASE_COLOR;
    int has = texture_ref(m, dtype, ref, sizeof ref);
    if (!has) {
      dtype = aiTextureType_DIFFUSE;
      has = texture_ref(m, dtype, ref, sizeof ref);
    }
    if (has) d = image_for(b, ref, matname);
    if (!b->gltf && texture_ref(m, aiTextureType_OPACITY, ref, sizeof ref))
      o = image_for(b, ref, matname);
    int cutout = 0;
    int32_t t = texture_for(b, d, o, &cutout);
    double xf[6];
    if (t >= 0 && d >= 0 && uv_transform(b, m, dtype, matname, xf)) {
      if (!out->uv_xform) {
        out->uv_xform = (double *)vx_malloc(6 * sizeof(double) * ((size_t)out->material_count + 1));
        if (!out->uv_xform) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for materials");
        static const double identity[6] = {1, 0, 0, 0, 1, 0};
        for (uint32_t k = 0; k <= out->material_count; k++)
          memcpy(out->uv_xform + 6 * (size_t)k, identity, sizeof identity);
      }
      memcpy(out->uv_xform + 6 * (size_t)i, xf, sizeof xf);
    }
    if (t >= 0) {
      tex.texture = t;
      if (!b->gltf) {
        float white[4] = {1.0f, 1.0f, 1.0f, opacity};
        tex.factor = pack(white);
        if (opacity >= 1.0f && cutout) {
          tex.alpha_mode = VX_ALPHA_MASK;
          tex.alpha_cutoff = 0.5f;
        }
      }
    }
  }
  int64_t a = with_uv ? soup_material(b, &tex) : 0, p = without_uv ? soup_material(b, &plain) : 0;
  if (a == -2 || p == -2) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for materials");
  if (a < 0 || p < 0)
    return vx_error_set(err, VX_ERR_LIMIT,
                        "the scene has more than %u distinct materials (colours, textures)",
                        VX_COLOR_MAX_MATERIALS);
  out->mat_index[2 * i] = (uint32_t)a;
  out->mat_index[2 * i + 1] = (uint32_t)p;
  out->mat_rgba[2 * i] = b->c->materials[a].factor;
  out->mat_rgba[2 * i + 1] = plain.factor;
  if (with_uv && b->c->materials[a].texture >= 0) out->want_uv = 1;
  if (out->vc_factor) memcpy(out->vc_factor + 4 * i, col, sizeof col);
  return VX_OK;
}

static int ext_is(const char *ext, const char *want) {
  if (!ext) return 0;
  size_t n = strlen(want);
  if (strlen(ext) != n) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = ext[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != want[i]) return 0;
  }
  return 1;
}

vx_status vx_scene_color_build(const struct aiScene *sc, const char *path, const char *ext,
                               vx_scene_color *out, vx_error *err) {
  memset(out, 0, sizeof *out);
  out->gltf = ext_is(ext, "gltf") || ext_is(ext, "glb");
  uint32_t nm = sc->mMaterials ? sc->mNumMaterials : 0;
  /* which materials meshes use: 1 with UVs, 2 without, 4 with translucent vertex colours */
  uint8_t *use = nm ? (uint8_t *)vx_calloc(nm, 1) : NULL;
  if (nm && !use) return vx_error_set(err, VX_ERR_NOMEM, "out of memory for materials");
  int colored = 0, any_vc = 0;
  for (unsigned k = 0; k < sc->mNumMeshes && sc->mMeshes; k++) {
    const struct aiMesh *am = sc->mMeshes[k];
    if (!am || am->mNumFaces == 0) continue;
    if (am->mColors[0]) any_vc = 1;
    if (am->mMaterialIndex >= nm) continue;
    use[am->mMaterialIndex] |= am->mTextureCoords[0] ? 1 : 2;
    /* vertex colours with alpha below 1: the material blends (other formats; glTF's mode rules) */
    for (unsigned v = 0; am->mColors[0] && !(use[am->mMaterialIndex] & 4) && v < am->mNumVertices; v++)
      if (am->mColors[0][v].a < 1.0f) use[am->mMaterialIndex] |= 4;
  }
  colored = any_vc;
  for (uint32_t i = 0; i < nm && !colored; i++)
    if (use[i] && sc->mMaterials[i] && !is_default_material(sc, i, out->gltf)) colored = 1;
  if (!colored) {
    vx_free(use);
    return VX_OK;
  }
  builder *b = (builder *)vx_calloc(1, sizeof *b);
  char *dir = NULL;
  vx_status s = VX_OK;
  out->material_count = nm;
  out->mat_index = (uint32_t *)vx_calloc(2 * (size_t)nm + 2, 4);
  out->mat_rgba = (uint32_t *)vx_calloc(2 * (size_t)nm + 2, 4);
  if (out->gltf) out->vc_factor = (float *)vx_calloc(4 * (size_t)nm + 4, sizeof(float));
  if (b) {
    b->c = (vx_soup_color *)vx_calloc(1, sizeof(vx_soup_color));
    b->mslot = (int32_t *)vx_malloc(MAT_SLOTS * sizeof(int32_t));
    b->img = (image *)vx_calloc(MAX_IMAGES, sizeof(image));
  }
  if (path) {
    size_t n = strlen(path);
    dir = (char *)vx_malloc(n + 2);
    if (dir) {
      memcpy(dir, path, n + 1);
      char *slash = strrchr(dir, '/');
      if (slash) slash[slash == dir ? 1 : 0] = 0;
      else strcpy(dir, ".");
    }
  }
  if (!b || !b->c || !b->mslot || !b->img || !out->mat_index || !out->mat_rgba ||
      (out->gltf && !out->vc_factor) || (path && !dir)) {
    s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for materials");
  } else {
    b->sc = sc;
    b->dir = dir;
    b->gltf = out->gltf;
    memset(b->islot, 0xff, sizeof b->islot);
    memset(b->cslot, 0xff, sizeof b->cslot);
    memset(b->mslot, 0xff, MAT_SLOTS * sizeof(int32_t));
    b->c->materials = (vx_material *)vx_malloc(VX_COLOR_MAX_MATERIALS * sizeof(vx_material));
    if (!b->c->materials) s = vx_error_set(err, VX_ERR_NOMEM, "out of memory for materials");
    /* a material for triangles whose mesh names none: assimp's default grey */
    if (s == VX_OK && nm == 0) {
      vx_material grey = {vx_rgba_pack_linear(0.6f, 0.6f, 0.6f, 1.0f), -1, VX_ALPHA_OPAQUE, 0.5f};
      soup_material(b, &grey);
      out->mat_rgba[0] = out->mat_rgba[1] = grey.factor;
    }
    for (uint32_t i = 0; s == VX_OK && i < nm; i++)
      if (use[i] && sc->mMaterials[i])
        s = build_material(b, i, use[i] & 1, (use[i] & 2) != 0, (use[i] & 4) != 0, out, err);
    if (s == VX_OK && b->c->material_count == 0) {
      vx_material grey = {vx_rgba_pack_linear(0.6f, 0.6f, 0.6f, 1.0f), -1, VX_ALPHA_OPAQUE, 0.5f};
      soup_material(b, &grey);
    }
  }
  if (s == VX_OK) {
    out->want_rgba = any_vc;
    if (b->wmore)
      b->wlen += (size_t)snprintf(b->warn + b->wlen, WARN_BYTES - b->wlen,
                                  "... and %u more warnings\n", b->wmore);
    if (b->wlen) {
      b->c->warnings = (char *)vx_malloc(b->wlen + 1);
      if (b->c->warnings) memcpy(b->c->warnings, b->warn, b->wlen + 1);
    }
    /* the material table at its size */
    vx_material *g = (vx_material *)vx_realloc(b->c->materials,
                                               b->c->material_count * sizeof(vx_material));
    if (g) b->c->materials = g;
    out->color = b->c;
    b->c = NULL;
  }
  if (b) {
    for (uint32_t i = 0; i < b->nimg; i++) {
      if (b->img[i].owned) vx_free(b->img[i].img.rgba);
      vx_free(b->img[i].ref);
      vx_free(b->img[i].path);
    }
    vx_soup_color_free(b->c);
    vx_free(b->mslot);
    vx_free(b->img);
    vx_free(b);
  }
  vx_free(dir);
  vx_free(use);
  if (s != VX_OK) vx_scene_color_release(out);
  return s;
}

void vx_scene_color_release(vx_scene_color *out) {
  vx_soup_color_free(out->color);
  vx_free(out->mat_index);
  vx_free(out->mat_rgba);
  vx_free(out->vc_factor);
  vx_free(out->uv_xform);
  memset(out, 0, sizeof *out);
}
