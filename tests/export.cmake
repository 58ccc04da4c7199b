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
