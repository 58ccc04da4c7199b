/* SPDX-License-Identifier: Apache-2.0 */
/* test_gpu_probe.cu - the check that this machine's GPU can run the build's code
 * (vx_cuda_usable, svo/cuda_status.cuh) and what the library does with its answer.
 *
 * Reference: a trivial kernel of this file, compiled for the same architectures, launched
 * directly. The check says "usable" exactly when that launch runs and writes its value; when it
 * says "not usable" and a device exists, the message names the GPU and its compute capability.
 * With VX_DEVICE_AUTO an unusable GPU gives one note and the CPU path (renderer, sampler,
 * conversion); with VX_DEVICE_GPU it is VX_ERR_NO_GPU with the same sentence.
 *
 * Runs on any machine (without a GPU it checks the no-device answer). The GPU run sets
 *   VX_EXPECT_GPU=1        the check must say usable (a build with code for the GPU);
 *   VX_EXPECT_NO_IMAGE=1   it must say the GPU cannot run the code (a PTX-only build run with
 *                          CUDA_DISABLE_PTX_JIT=1, or a build for other architectures).
 * scripts/device_ptx_check.sh runs both. */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voxlod.h"
#include "svo/cuda_status.cuh"
#include "check.h"
#include "meshgen.h"

__global__ void probe_write(int *out) { *out = 42; }

/* 1 when probe_write runs on the current device and writes its value. */
static int kernel_runs(cudaError_t *why) {
  int *d = NULL, h = 0;
  *why = cudaMalloc((void **)&d, sizeof(int));
  if (*why == cudaSuccess) {
    probe_write<<<1, 1>>>(d);
    *why = cudaGetLastError();
    if (*why == cudaSuccess) *why = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  }
  if (d) cudaFree(d);
  cudaGetLastError();
  return *why == cudaSuccess && h == 42;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static void probe_arch_names(void) {
  char b[64];
  CHECK(strcmp(vx_cuda_arch_names("750,800,860,1200,1210", b, sizeof b),
               "7.5, 8.0, 8.6, 12.0, 12.1") == 0);
  CHECK(strcmp(vx_cuda_arch_names("900", b, sizeof b), "9.0") == 0);
  CHECK(strcmp(vx_cuda_arch_names("", b, sizeof b), "") == 0);
  CHECK(strcmp(vx_cuda_arch_names(NULL, b, sizeof b), "") == 0);
  /* a short buffer: whole entries only, always terminated */
  char s[8];
  memset(s, 'x', sizeof s);
  vx_cuda_arch_names("750,800,860", s, sizeof s);
  CHECK(strcmp(s, "7.5") == 0);
  /* this build's own list: every architecture CMake compiled for, Turing or newer */
  vx_cuda_arch_names(VX_CUDA_ARCH_LIST, b, sizeof b);
  printf("this build carries GPU code for compute capabilities %s\n", b);
  CHECK(b[0] != '\0');
  CHECK(atoi(VX_CUDA_ARCH_LIST) >= 750);
}

static vx_status probe_answer;
static char probe_msg[512];

static void probe_matches_a_launch(void) {
  vx_error e;
  memset(&e, 0, sizeof e);
  probe_answer = vx_cuda_usable((const void *)probe_write, &e);
  /* the sentence, less the location of the call " (file.cu:12)" (the library's differ) */
  snprintf(probe_msg, sizeof probe_msg, "%s", e.msg);
  char *loc = strrchr(probe_msg, '(');
  if (loc && loc > probe_msg + 1) loc[-1] = '\0';
  cudaError_t why = cudaSuccess;
  int runs = kernel_runs(&why);
  printf("check: %s%s%s; direct launch: %s (%s)\n", vx_status_str(probe_answer),
         probe_answer ? ": " : "", probe_answer ? e.msg : "", runs ? "runs" : "fails",
         cudaGetErrorString(why));
  CHECK(probe_answer == VX_OK || probe_answer == VX_ERR_NO_GPU);
  CHECK_MSG((probe_answer == VX_OK) == runs, "the check and a real launch disagree");
  if (probe_answer != VX_OK) {
    CHECK(strncmp(e.msg, "GPU: ", 5) == 0);
    CHECK(strchr(e.msg, '\n') == NULL);
    int n = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0 &&
        cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
      char cc[64];
      snprintf(cc, sizeof cc, "(compute capability %d.%d)", prop.major, prop.minor);
      CHECK_MSG(strstr(e.msg, prop.name) && strstr(e.msg, cc), "message: %s", e.msg);
    }
    cudaGetLastError();
  }
  if (env_on("VX_EXPECT_GPU")) CHECK_MSG(probe_answer == VX_OK, "%s", e.msg);
  if (env_on("VX_EXPECT_NO_IMAGE"))
    CHECK_MSG(probe_answer == VX_ERR_NO_GPU && strstr(e.msg, "cannot run this build"),
              "expected a GPU without code for it: %s", e.msg);
}

/* The number of lines of a note text ("" has none). */
static int note_lines(const char *t) {
  if (!t || !*t) return 0;
  int n = 1;
  for (; *t; t++) n += *t == '\n';
  return n;
}

static vx_mesh *sphere_mesh(void) {
  vx_soup m = {0};
  CHECK(meshgen_sphere(&m, 0, 0, 0, 1.0, 24, 12) == 0);
  vx_mesh *mesh = NULL;
  vx_error e;
  CHECK_MSG(vx_mesh_from_arrays(m.pos, m.tri_count * 3, NULL, m.tri_count, &mesh, &e) == VX_OK,
            "%s", e.msg);
  vx_soup_free(&m);
  return mesh;
}

/* VX_DEVICE_AUTO: the GPU when the check says usable, else one note (the check's sentence) and
 * the CPU; VX_DEVICE_GPU: VX_ERR_NO_GPU with that sentence. */
static void library_follows_the_check(void) {
  const int usable = probe_answer == VX_OK;
  vx_mesh *mesh = sphere_mesh();
  vx_convert_opts co;
  memset(&co, 0, sizeof co);
  co.struct_size = sizeof co;
  co.resolution = 32;
  co.device = VX_DEVICE_AUTO;
  vx_conversion *b = NULL;
  vx_error e;
  memset(&e, 0, sizeof e);
  CHECK_MSG(vx_convert(mesh, &co, &b, &e) == VX_OK, "%s", e.msg);
  if (!b) {
    vx_mesh_free(mesh);
    return;
  }
  const char *bn = vx_conversion_notes(b);
  printf("convert (auto) notes: [%s]\n", bn);
  if (!usable) {
    CHECK_MSG(note_lines(bn) == 1 && strstr(bn, probe_msg), "notes: %s", bn);
    co.device = VX_DEVICE_GPU;
    vx_conversion *g = NULL;
    CHECK(vx_convert(mesh, &co, &g, &e) == VX_ERR_NO_GPU);
    CHECK_MSG(strstr(e.msg, probe_msg) != NULL, "%s", e.msg);
    vx_conversion_free(g);
  }
  vx_tree *t = vx_conversion_take_tree(b);
  vx_conversion_free(b);
  vx_mesh_free(mesh);

  vx_renderer_opts ro;
  memset(&ro, 0, sizeof ro);
  ro.struct_size = sizeof ro;
  ro.device = VX_DEVICE_AUTO;
  vx_renderer *r = NULL;
  CHECK_MSG(vx_renderer_create(t, &ro, &r, &e) == VX_OK, "%s", e.msg);
  if (r) {
    vx_renderer_info ri;
    memset(&ri, 0, sizeof ri);
    ri.struct_size = sizeof ri;
    CHECK(vx_renderer_get_info(r, &ri) == VX_OK);
    CHECK(ri.used_gpu == usable);
    const char *rn = vx_renderer_notes(r);
    printf("renderer (auto) on %s, notes: [%s]\n", ri.device, rn);
    if (!usable) CHECK_MSG(note_lines(rn) == 1 && strstr(rn, probe_msg), "notes: %s", rn);
    else CHECK(note_lines(rn) == 0);
    vx_renderer_free(r);
  }
  ro.device = VX_DEVICE_GPU;
  r = NULL;
  vx_status s = vx_renderer_create(t, &ro, &r, &e);
  CHECK(s == (usable ? VX_OK : VX_ERR_NO_GPU));
  if (!usable) CHECK_MSG(strstr(e.msg, probe_msg) != NULL, "%s", e.msg);
  vx_renderer_free(r);

  vx_sampler_opts so;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  so.device = VX_DEVICE_AUTO;
  vx_sampler *sm = NULL;
  CHECK_MSG(vx_sampler_create(t, &so, &sm, &e) == VX_OK, "%s", e.msg);
  if (sm) {
    CHECK(vx_sampler_uses_gpu(sm) == usable);
    const char *sn = vx_sampler_notes(sm);
    if (!usable) CHECK_MSG(note_lines(sn) == 1 && strstr(sn, probe_msg), "notes: %s", sn);
    /* the answer is right on whichever device: 0.03 inside the unit sphere (a voxel is 1/16;
     * the 24 x 12 facets lie up to 0.009 inside the sphere) */
    const float p[3] = {0.97f, 0.0f, 0.0f};
    float d = 0.0f;
    CHECK_MSG(vx_sampler_sample(sm, NULL, p, 1, &d, NULL, NULL, NULL, &e) == VX_OK, "%s", e.msg);
    CHECK_NEAR(d, -0.03, 0.03);
    vx_sampler_free(sm);
  }
  vx_tree_free(t);
}

int main(void) {
  RUN(probe_arch_names);
  RUN(probe_matches_a_launch);
  RUN(library_follows_the_check);
  return check_summary();
}
