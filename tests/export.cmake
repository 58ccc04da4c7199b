# SPDX-License-Identifier: Apache-2.0
# Grids and voxel formats out, OpenVDB level sets in (include/voxlod/export.h). The files are
# checked by readers that are not ours: decoders written from the public format descriptions
# (test_export.c), NanoVDB's own reader (test_export_nanovdb.cpp), pyopenvdb and vdb_print
# (test_export_vdb.py, test_export_cli.sh).
set(VX_CORPUS_DIR "${VOXLOD_ROOT}/tests/corpus")
vx_add_test(test_export SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_export.c LIBS vx_lib)
target_compile_definitions(test_export PRIVATE VX_CORPUS_DIR="${VX_CORPUS_DIR}")
# Colour out: a tree coloured by hand, meshed and exported (test_export_color.c checks through the
# library; with a directory it writes the files that test_export_color.py reads with trimesh, its
# own .vox parser and pyopenvdb).
vx_add_test(test_export_color SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_export_color.c LIBS vx_lib)
set(VX_COLOR_DIR ${CMAKE_CURRENT_BINARY_DIR}/test_export_color_tmp)
# trimesh and numpy come with the Python test dependencies (scripts/test.sh installs them before
# ctest runs and names the interpreter in VOXLOD_TEST_PYTHON); skipped (77) where they are missing.
if(VOXLOD_TEST_PYTHON)
  set(VX_COLOR_PYTHON ${VOXLOD_TEST_PYTHON})
else()
  find_program(VX_COLOR_PYTHON python3)
endif()
if(VX_COLOR_PYTHON)
  add_test(NAME test_export_color_meshes COMMAND ${VX_COLOR_PYTHON}
           ${CMAKE_CURRENT_SOURCE_DIR}/test_export_color.py $<TARGET_FILE:test_export_color>
           ${VX_COLOR_DIR}/meshes meshes)
  set_tests_properties(test_export_color_meshes PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
if(VOXLOD_HAVE_OPENVDB AND EXISTS /usr/bin/python3)
  add_test(NAME test_export_color_vdb COMMAND /usr/bin/python3
           ${CMAKE_CURRENT_SOURCE_DIR}/test_export_color.py $<TARGET_FILE:test_export_color>
           ${VX_COLOR_DIR}/vdb vdb)
  set_tests_properties(test_export_color_vdb PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
if(NANOVDB_INCLUDE_DIR)
  add_executable(test_export_color_nanovdb ${CMAKE_CURRENT_SOURCE_DIR}/test_export_color_nanovdb.cpp)
  target_include_directories(test_export_color_nanovdb SYSTEM PRIVATE ${NANOVDB_INCLUDE_DIR})
  add_test(NAME test_export_color_nanovdb COMMAND sh -c
           "mkdir -p \"$1\" && \"$2\" \"$1\" >/dev/null && \"$3\" \"$1/lod5.nvdb\" \"$1/frame.txt\" 5"
           sh ${VX_COLOR_DIR}/nvdb $<TARGET_FILE:test_export_color>
           $<TARGET_FILE:test_export_color_nanovdb>)
  set_tests_properties(test_export_color_nanovdb PROPERTIES TIMEOUT 300)
endif()
if(NANOVDB_INCLUDE_DIR)
  vx_add_test(test_export_nanovdb SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_export_nanovdb.cpp
              LIBS vx_lib)
  target_include_directories(test_export_nanovdb SYSTEM PRIVATE ${NANOVDB_INCLUDE_DIR})
endif()
if(VOXLOD_TOOLS)
  add_test(NAME test_export_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_export_cli.sh
           $<TARGET_FILE:voxlod> ${VX_DATA_DIR} ${VX_CORPUS_DIR})
  set_tests_properties(test_export_cli PROPERTIES TIMEOUT 300)
  # pyopenvdb (Debian's python3-openvdb) is built for the system Python; the test skips (77)
  # where it is missing, and is not registered without OpenVDB.
  if(VOXLOD_HAVE_OPENVDB AND EXISTS /usr/bin/python3)
    add_test(NAME test_export_vdb COMMAND /usr/bin/python3
             ${CMAKE_CURRENT_SOURCE_DIR}/test_export_vdb.py $<TARGET_FILE:voxlod>
             ${CMAKE_CURRENT_BINARY_DIR}/test_export_vdb_tmp)
    set_tests_properties(test_export_vdb PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  endif()
endif()
# Names from files (a .vdb grid name, a glTF buffer path) reach the terminal escaped.
if(VOXLOD_TOOLS)
  add_test(NAME test_cli_names COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_names.sh
           $<TARGET_FILE:voxlod> ${VX_DATA_DIR})
  set_tests_properties(test_cli_names PROPERTIES TIMEOUT 120)
endif()
