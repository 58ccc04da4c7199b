/* SPDX-License-Identifier: Apache-2.0 */
/* stb_write.h - stb_image_write for the tests that write images (textures of generated meshes):
 * its implementation, static in each test, without its warnings. */
#ifndef VOXLOD_TESTS_STB_WRITE_H
#define VOXLOD_TESTS_STB_WRITE_H

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

#endif
