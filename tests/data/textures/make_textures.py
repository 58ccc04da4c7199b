#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_textures.py - writes the JPEG textures of test_formats_color_tables.c and what Pillow
decodes them to, the reference the test compares voxlod's decode with.

    python3 tests/data/textures/make_textures.py

The JPEGs go to tests/corpus/texture (they are also fuzz_texture's seeds), each reference beside
this script as a binary PPM (P6, 8-bit RGB) of the same name:
  rgb12x10.jpg             12x10 RGB, baseline, 4:2:0, quality 90 (gradients and a hard edge)
  grey9x7_progressive.jpg  9x7 greyscale, progressive, quality 90
  cmyk8x8.jpg              8x8 CMYK (Adobe, inverted samples), 4:4:4, quality 95
Pillow decodes with its own build of libjpeg-turbo; the CMYK reference is Pillow's CMYK samples
made RGB as r = (255 - c) (255 - k) / 255 (rounded), as voxlod does (and stb_image did). The test
allows 2 codes per channel between the two decoders. Needs Pillow.
"""
import os

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "corpus", "texture")


def rgb_of_cmyk(im):
    out = Image.new("RGB", im.size)
    for y in range(im.size[1]):
        for x in range(im.size[0]):
            c, m, ye, k = im.getpixel((x, y))
            out.putpixel((x, y), tuple(((255 - v) * (255 - k) + 127) // 255 for v in (c, m, ye)))
    return out


def main():
    im = Image.new("RGB", (12, 10))
    for y in range(10):
        for x in range(12):
            im.putpixel((x, y), (20 * x + 10, 25 * y + 5, 200 if x < 6 else 40))
    im.save(os.path.join(CORPUS, "rgb12x10.jpg"), quality=90, subsampling=2)
    g = Image.new("L", (9, 7))
    for y in range(7):
        for x in range(9):
            g.putpixel((x, y), (x * 28 + y * 9) % 256)
    g.save(os.path.join(CORPUS, "grey9x7_progressive.jpg"), quality=90, progressive=True)
    c = Image.new("CMYK", (8, 8))
    for y in range(8):
        for x in range(8):
            c.putpixel((x, y), (x * 30, y * 30, 100, 40 + 10 * x))
    c.save(os.path.join(CORPUS, "cmyk8x8.jpg"), quality=95, subsampling=0)
    for name in ("rgb12x10", "grey9x7_progressive", "cmyk8x8"):
        dec = Image.open(os.path.join(CORPUS, name + ".jpg"))
        dec.load()
        ref = rgb_of_cmyk(dec) if dec.mode == "CMYK" else dec.convert("RGB")
        ref.save(os.path.join(HERE, name + ".ppm"))
        print(name, dec.mode, dec.size)


if __name__ == "__main__":
    main()
