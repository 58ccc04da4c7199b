#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what voxlod needs to build and test, from the distribution's packages (Debian 12 /
# Ubuntu 22.04+), when it is missing. Run as root (or with sudo available). Idempotent.
#   required: the compiler, CMake, assimp, zstd, stb, libturbojpeg (JPEG textures, the viewer's
#   frames)
#   optional (their parts are built and tested when present; the install is attempted, and a
#   package the distribution lacks is skipped): NanoVDB and OpenVDB (grids in and out, the
#   volumeToMesh comparison), civetweb (voxlod view), chromium with its driver
#   and selenium (the viewer's browser test), websocket-client (its protocol test), clang's
#   runtime (the fuzzers)
set -euo pipefail
pkgs=(cmake make gcc g++ pkg-config libassimp-dev libzstd-dev libstb-dev libturbojpeg0-dev zstd)
if [ "${VOXLOD_WITH_FUZZ:-0}" = 1 ]; then pkgs+=(clang); fi
optional=(libnanovdb-dev libboost-dev libboost-iostreams-dev libopenvdb-dev libopenvdb-tools python3-openvdb libcivetweb-dev
          chromium chromium-driver python3-selenium python3-websocket)
if [ "${VOXLOD_WITH_FUZZ:-0}" = 1 ]; then optional+=(libclang-rt-14-dev); fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() missing_opt=()
for p in "${pkgs[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${optional[@]}"; do installed "$p" || missing_opt+=("$p"); done
if [ ${#missing[@]} -gt 0 ] || [ ${#missing_opt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "deps: installing ${missing[*]} ${missing_opt[*]}" >&2
  $SUDO apt-get update -qq
  export DEBIAN_FRONTEND=noninteractive
  if ! $SUDO apt-get install -y -qq "${missing[@]}" "${missing_opt[@]}" >/dev/null; then
    [ ${#missing[@]} -eq 0 ] || $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    for p in "${missing_opt[@]}"; do
      $SUDO apt-get install -y -qq "$p" >/dev/null 2>&1 || echo "deps: optional $p is not available here; its parts are skipped" >&2
    done
  fi
fi
