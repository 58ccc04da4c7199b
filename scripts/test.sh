#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The test suite, as README.md and .ci/run call it: installs missing packages, builds (with the
# CUDA code whenever nvcc is found, so it is always compiled), and runs ctest. GPU tests (label
# `gpu`) skip themselves where there is no GPU. Then the same suite under ASan/UBSan (CPU code),
# and each fuzz target for a bounded time. Ends with `summary: N passed, M failed, K skipped`
# and the skipped tests named (scripts/test_summary.sh). Where $CI is set only GPU tests (and
# pytest's `optional` ones) may skip: a test that misses an optional dependency fails there
# (scripts/deps.sh and the pip line below install them all).
#   VOXLOD_FUZZ_SECONDS=N   seconds per fuzz target (default 30; 0 skips fuzzing)
#   VOXLOD_SANITIZE=0       skip the sanitizer build
#   VOXLOD_PYTHON_TESTS=0   skip the Python package (pip install . and pytest)
#   VOXLOD_TEST_CUDA_ARCHS  the CUDA architectures compiled here, a CMake list (default 90)
set -euo pipefail
cd "$(dirname "$0")/.."
export VOXLOD_WITH_FUZZ=1
bash scripts/deps.sh
jobs=$(nproc)

# GPU code for one architecture only (sm_90, the GPU machine's): the default fat binary (every
# architecture from sm_75 on, README "GPUs") would take most of CI's time. test_gpu_oldest_arch
# still compiles every .cu file for sm_75 (the oldest of that list) and compute_90 together.
cuda_archs=${VOXLOD_TEST_CUDA_ARCHS:-90}

# The Python test dependencies first: ctest's readers in Python (trimesh) use them too. An
# externally managed Python (Debian's own, PEP 668) gets a virtual environment instead.
py=python3
pydeps=(pytest numpy libigl tqdm hypothesis trimesh "dask[distributed]")
if [ "${VOXLOD_PYTHON_TESTS:-1}" != 0 ]; then
  if ! $py -m pip install -q "${pydeps[@]}" >build-python.log 2>&1; then
    python3 -m venv build-python/venv >>build-python.log 2>&1 && py="$PWD/build-python/venv/bin/python" &&
      $py -m pip install -q "${pydeps[@]}" >>build-python.log 2>&1 || true
  fi
fi

echo "== build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVOXLOD_BENCH=ON \
  -DVOXLOD_TEST_PYTHON="$(command -v "$py" || echo "$py")" \
  -DCMAKE_CUDA_ARCHITECTURES="$cuda_archs" >build.log 2>&1 || { cat build.log; exit 1; }
cmake --build build -j"$jobs" >>build.log 2>&1 || { tail -50 build.log; exit 1; }
source scripts/test_summary.sh
status=0
ctest --test-dir build --output-on-failure -j"$jobs" 2>&1 | tee build/ctest.log || status=1
count_ctest build build build/ctest.log

# The Python package: `pip install .` (the same CMake build, for the same CUDA architectures as
# above, through CMake's CUDAARCHS) and its pytest suite. The build is kept in
# build-python/ci-<archs>-<tag>, so that a second run recompiles only what changed and a plain
# `pip install .` (every architecture, in build-python/<tag>) never reuses it. The interpreter
# and its dependencies were set up before the build.
if [ "${VOXLOD_PYTHON_TESTS:-1}" != 0 ]; then
  echo "== Python package (pip install ., pytest python/tests)"
  if CUDAARCHS="$cuda_archs" SKBUILD_BUILD_DIR="build-python/ci-${cuda_archs//;/-}-{wheel_tag}" \
     $py -m pip install -q . >>build-python.log 2>&1; then
    rm -f build/pytest.xml
    VOXLOD_CLI="$PWD/build/voxlod" $py -m pytest -q -rs -p no:cacheprovider \
      --junitxml=build/pytest.xml python/tests 2>&1 | tee build/pytest.log || status=1
    count_pytest pytest build/pytest.xml build/pytest.log "$py"
  else
    tail -50 build-python.log
    total_fail=$((total_fail + 1)); fail_names+=("pip install . (see build-python.log)"); status=1
  fi
fi

if [ "${VOXLOD_SANITIZE:-1}" != 0 ]; then
  echo "== ASan/UBSan build and test (build-asan/, CPU paths)"
  # Without OpenVDB: libopenvdb loads log4cplus, which starts worker threads at load time, and
  # GCC 12's AddressSanitizer allocator is not fork-safe while another thread is inside it (the
  # isolated mesh import forks), so an import child could hang there. The code that calls OpenVDB
  # is tested by the plain build; our own .vdb scanning and answer checks, by fuzz_vdb (sanitized).
  # -O1, as AddressSanitizer's documentation advises: the same checks, about a fifth less time.
  # Tests labelled `heavy` (large reference computations over code other tests run sanitized)
  # run in the plain build only.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DVOXLOD_SANITIZE=ON -DVOXLOD_CUDA=OFF \
    -DVOXLOD_OPENVDB=OFF -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
    >build-asan.log 2>&1 || { cat build-asan.log; exit 1; }
  cmake --build build-asan -j"$jobs" >>build-asan.log 2>&1 || { tail -50 build-asan.log; exit 1; }
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp" \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "slow|ptx|install|heavy" 2>&1 | tee build-asan/ctest.log || status=1
  count_ctest asan build-asan build-asan/ctest.log
fi

if [ "${VOXLOD_FUZZ_SECONDS:-30}" != 0 ] && command -v clang >/dev/null && [ -x fuzz/run.sh ]; then
  echo "== fuzzing (build-fuzz/), ${VOXLOD_FUZZ_SECONDS:-30}s per target"
  mkdir -p build-fuzz
  if bash fuzz/run.sh build-fuzz "${VOXLOD_FUZZ_SECONDS:-30}" 2>&1 | tee build-fuzz/fuzz.log; then
    count_plain fuzz "$(grep -c "^== fuzz_" build-fuzz/fuzz.log)" 0
  else
    count_plain fuzz 0 1; status=1
  fi
fi
print_summary
[ "$total_fail" -eq 0 ] || status=1
exit $status
