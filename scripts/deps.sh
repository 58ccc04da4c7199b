#!/usr/bin/env bash
# Installs what voxlod needs to build and test, from the distribution's packages (Debian 12 /
# Ubuntu 22.04+), when it is missing. Run as root (or with sudo available). Idempotent.
set -euo pipefail
pkgs=(cmake make gcc pkg-config libassimp-dev libzstd-dev libstb-dev zstd)
if [ "${VOXLOD_WITH_FUZZ:-0}" = 1 ]; then pkgs+=(clang); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Optional: NanoVDB headers for the comparison benchmark, and libclang-rt for the fuzzers.
for p in libnanovdb-dev $( [ "${VOXLOD_WITH_FUZZ:-0}" = 1 ] && echo libclang-rt-14-dev ); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
      $(printf '%s\n' "${missing[@]}" | grep -v -e nanovdb -e clang-rt) >/dev/null
fi
