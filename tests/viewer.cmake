# SPDX-License-Identifier: Apache-2.0
# `voxlod view` (viewer/) and the image API it uses:
#   test_viewer_protocol  the server without a browser (a websocket client): the page, 404s, the
#                         token and Host/Origin checks, frames, and every bad input
#   test_viewer_jpeg      the JPEG strips joined with restart markers (tests/test_viewer_jpeg.c): the same
#                         pixels as a single-pass encode through libjpeg-turbo's decoder, the
#                         encoder pool, refusals, changed bytes
#   test_viewer_host      the Host header's grammar, loopback names, escaping of printed names
#   test_viewer_limits    hostile clients and odd setups: slow request heads (a tab's first frame
#                         within 1 s under 100 of them), handshakes at once vs --max-tabs, --host
#                         127.0.0.2, methods, a tree whose world box does not fit in float
#   test_viewer_browser   the page in headless chromium driven by selenium against --cpu; skips
#                         (77, saying why) only where chromium, its driver or selenium are missing
#   test_api_image        vx_encode_png through the public header
# The Python tests run on the distribution's /usr/bin/python3 (python3-websocket,
# python3-selenium), not on whichever python3 comes first on PATH.
if(COMMAND vx_add_api_test)
  vx_add_api_test(test_api_image)
  target_include_directories(test_api_image PRIVATE ${STB_INCLUDE_DIR})
endif()
if(TARGET voxlod AND VOXLOD_HAVE_VIEWER)
  # The JPEG strips and their join against libjpeg-turbo's decoder (the viewer's own sources).
  add_executable(test_viewer_jpeg ${VOXLOD_ROOT}/tests/test_viewer_jpeg.c ${VOXLOD_ROOT}/viewer/jpeg.c
                 ${VOXLOD_ROOT}/viewer/jpeg_join.c ${VOXLOD_ROOT}/viewer/encoder.c)
  vx_folder_include(viewer vx_viewer_include)
  target_include_directories(test_viewer_jpeg PRIVATE ${vx_viewer_include})
  target_link_libraries(test_viewer_jpeg PRIVATE PkgConfig::TURBOJPEG Threads::Threads ${M_LIB})
  add_test(NAME test_viewer_jpeg COMMAND test_viewer_jpeg)
  set_tests_properties(test_viewer_jpeg PROPERTIES TIMEOUT 300 LABELS viewer)
  # The Host header's grammar, the loopback test and the escaping of printed names.
  add_executable(test_viewer_host ${VOXLOD_ROOT}/tests/test_viewer_host.c ${VOXLOD_ROOT}/viewer/protocol.c)
  target_include_directories(test_viewer_host PRIVATE ${VOXLOD_ROOT})
  target_link_libraries(test_viewer_host PRIVATE ${M_LIB})
  add_test(NAME test_viewer_host COMMAND test_viewer_host)
  set_tests_properties(test_viewer_host PROPERTIES TIMEOUT 60 LABELS viewer)
  find_program(VX_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  foreach(t protocol browser limits)
    if(VX_SYSTEM_PYTHON3)
      add_test(NAME test_viewer_${t} COMMAND ${VX_SYSTEM_PYTHON3}
               ${CMAKE_CURRENT_SOURCE_DIR}/test_viewer_${t}.py $<TARGET_FILE:voxlod> ${VX_DATA_DIR})
    else()
      add_test(NAME test_viewer_${t} COMMAND sh -c "echo 'SKIP: no /usr/bin/python3'; ${VX_SKIP_OR_FAIL}")
    endif()
    set_tests_properties(test_viewer_${t} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                         LABELS viewer)
  endforeach()
endif()
