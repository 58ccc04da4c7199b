#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_install.sh BUILD_DIR SOURCE_DIR DATA_DIR - libvoxlod as a user gets it: `cmake --install`
# into a scratch prefix, then the examples built against the *installed* package twice (through
# find_package(voxlod) and through pkg-config), the installed CLI, only vx_* symbols exported, the
# public header compiled as C++; a static libvoxlod (BUILD_SHARED_LIBS=OFF, built here without
# CUDA) installed and used the same two ways; and the checkout used by a parent project through
# add_subdirectory().
set -u
B=$1 S=$2 DATA=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
ok() { passes=$((passes + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; [ -f "$T/log" ] && tail -20 "$T/log"; }
P=$T/prefix

if cmake --install "$B" --prefix "$P" >"$T/log" 2>&1; then ok "cmake --install"; else bad "cmake --install"; fi
LIB=$(dirname "$(find "$P" -name 'libvoxlod.so.0' | head -1)")
for f in include/voxlod.h include/voxlod/base.h bin/voxlod share/doc/voxlod/LICENSE \
         share/doc/voxlod/NOTICE share/doc/voxlod/THIRD_PARTY_NOTICES.md; do
  [ -e "$P/$f" ] && ok "installed $f" || bad "installed $f"
done
for f in libvoxlod.so libvoxlod.so.0 pkgconfig/voxlod.pc cmake/voxlod/voxlodConfig.cmake \
         cmake/voxlod/voxlodConfigVersion.cmake; do
  [ -e "$LIB/$f" ] && ok "installed lib/$f" || bad "installed lib/$f"
done
soname=$(objdump -p "$LIB/libvoxlod.so" 2>/dev/null | awk '/SONAME/ {print $2}')
[ "$soname" = libvoxlod.so.0 ] && ok "SONAME $soname" || bad "SONAME is '$soname'"
others=$(nm -D --defined-only "$LIB/libvoxlod.so" | awk '{print $3}' | grep -v '^vx_' | grep -v '^$')
count=$(nm -D --defined-only "$LIB/libvoxlod.so" | grep -c ' vx_')
if [ -z "$others" ] && [ "$count" -gt 20 ]; then ok "only vx_* exported ($count symbols)"
else bad "exported symbols other than vx_*: $(echo $others | head -c 300)"; fi
if nm -D --defined-only "$LIB/libvoxlod.so" | grep -qE ' vx_(octree|soup|svo|march|voxelize|stream)_'; then
  bad "internal vx_ functions exported"; else ok "no internal function exported"; fi

# the installed command line finds its library
if "$P/bin/voxlod" --version >"$T/log" 2>&1 && grep -q "0\.1" "$T/log"; then ok "installed voxlod --version"; else bad "installed voxlod --version"; fi

# find_package(voxlod)
if cmake -S "$S/examples" -B "$T/ex" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release >"$T/log" 2>&1 &&
   cmake --build "$T/ex" >>"$T/log" 2>&1; then ok "examples built with find_package(voxlod)"; else bad "examples built with find_package(voxlod)"; fi
if "$T/ex/tree_from_arrays" >"$T/log" 2>&1 && grep -q "surface voxels" "$T/log"; then ok "tree_from_arrays (find_package)"; else bad "tree_from_arrays (find_package)"; fi
if "$T/ex/convert_and_render" "$DATA/bunny_res4.ply" "$T/b.svo" "$T/b.png" 32 >"$T/log" 2>&1 &&
   grep -q "libvoxlod 0\.1" "$T/log" && head -c 8 "$T/b.png" | od -An -c | grep -q "P   N   G" &&
   "$P/bin/voxlod" stats "$T/b.svo" >/dev/null 2>&1; then ok "convert_and_render (find_package): svo, png, version"
else bad "convert_and_render (find_package)"; fi

if "$T/ex/sample_distances" "$T/b.svo" "$T/b.xyzd" 5000 >"$T/log" 2>&1 && grep -q "^CPU: 5000 points" "$T/log" &&
   [ "$(wc -l <"$T/b.xyzd")" -eq 5000 ]; then ok "sample_distances (find_package): 5000 distances"
else bad "sample_distances (find_package)"; fi

# pkg-config
export PKG_CONFIG_PATH="$LIB/pkgconfig"
if pkg-config --exists voxlod && [ "$(pkg-config --modversion voxlod)" = 0.1.0 ]; then ok "pkg-config voxlod 0.1.0"; else bad "pkg-config voxlod"; fi
if cc -std=c11 -Wall -Wextra -Werror "$S/examples/tree_from_arrays.c" $(pkg-config --cflags --libs voxlod) \
     -Wl,-rpath,"$LIB" -o "$T/pc_shared" >"$T/log" 2>&1 && "$T/pc_shared" >"$T/log" 2>&1; then
  ok "tree_from_arrays (pkg-config, shared)"; else bad "tree_from_arrays (pkg-config, shared)"; fi

# a static libvoxlod: installed, then used through find_package (its dependencies found by the
# package's config) and through pkg-config --static
P2=$T/prefix-static
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if cmake -S "$S" -B "$T/static" -DBUILD_SHARED_LIBS=OFF -DVOXLOD_CUDA=OFF -DVOXLOD_TESTS=OFF \
     -DVOXLOD_TOOLS=OFF -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >"$T/log" 2>&1 &&
   cmake --build "$T/static" -j"$(nproc)" --target libvoxlod >>"$T/log" 2>&1 &&
   cmake --install "$T/static" --prefix "$P2" >>"$T/log" 2>&1; then ok "static libvoxlod built and installed"
else bad "static libvoxlod built and installed"; fi
LIB2=$(dirname "$(find "$P2" -name 'libvoxlod.a' | head -1)")
if [ -f "$LIB2/libvoxlod.a" ] && [ -z "$(find "$P2" -name 'libvoxlod.so*')" ]; then ok "installed libvoxlod.a alone"
else bad "installed libvoxlod.a alone"; fi
if cmake -S "$S/examples" -B "$T/ex2" -DCMAKE_PREFIX_PATH="$P2" -DCMAKE_BUILD_TYPE=Release >"$T/log" 2>&1 &&
   cmake --build "$T/ex2" >>"$T/log" 2>&1 && ! ldd "$T/ex2/convert_and_render" | grep -q libvoxlod &&
   "$T/ex2/convert_and_render" "$DATA/bunny_res4.ply" "$T/s2.svo" "$T/s2.png" 16 >"$T/log" 2>&1 &&
   [ -s "$T/s2.png" ] && "$T/ex2/tree_from_arrays" >"$T/log" 2>&1; then
  ok "examples (find_package, static)"; else bad "examples (find_package, static)"; fi
if cc -std=c11 "$S/examples/convert_and_render.c" $(PKG_CONFIG_PATH="$LIB2/pkgconfig" pkg-config --cflags voxlod) \
     $(PKG_CONFIG_PATH="$LIB2/pkgconfig" pkg-config --static --libs voxlod) -o "$T/pc_static" >"$T/log" 2>&1 &&
   ! ldd "$T/pc_static" | grep -q libvoxlod && "$T/pc_static" "$DATA/bunny_res4.ply" "$T/s.svo" "$T/s.png" 16 >"$T/log" 2>&1 &&
   [ -s "$T/s.png" ]; then ok "convert_and_render (pkg-config, static)"; else bad "convert_and_render (pkg-config, static)"; fi

# the public header as C++
printf '#include <voxlod.h>\n#include <cstdio>\nint main() { vx_error e; (void)e; std::printf("%%s\\n", vx_version()); return VOXLOD_VERSION_MAJOR; }\n' >"$T/cxx.cpp"
if c++ -std=c++11 -Wall -Wextra -Werror -pedantic -I"$P/include" "$T/cxx.cpp" -L"$LIB" -lvoxlod \
     -Wl,-rpath,"$LIB" -o "$T/cxx" >"$T/log" 2>&1 && "$T/cxx" | grep -q "0\.1"; then ok "voxlod.h compiles and links as C++"; else bad "voxlod.h as C++"; fi

# add_subdirectory() of the checkout from a parent project (without CUDA, to keep it quick)
mkdir -p "$T/parent"
cat >"$T/parent/CMakeLists.txt" <<EOT
cmake_minimum_required(VERSION 3.20)
project(parent C)
add_subdirectory("$S" voxlod)
add_executable(uses_voxlod "$S/examples/tree_from_arrays.c")
target_link_libraries(uses_voxlod PRIVATE voxlod::voxlod)
EOT
if cmake -S "$T/parent" -B "$T/parent/build" -DVOXLOD_CUDA=OFF -DCMAKE_BUILD_TYPE=Release >"$T/log" 2>&1 &&
   cmake --build "$T/parent/build" -j"$(nproc)" --target uses_voxlod >>"$T/log" 2>&1 &&
   "$T/parent/build/uses_voxlod" >"$T/log" 2>&1; then ok "add_subdirectory() from a parent project"; else bad "add_subdirectory()"; fi

echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
