# SPDX-License-Identifier: Apache-2.0
# VoxlodLayers.cmake - one CMake target per layer, and includes that only reach down.
#
# Internal headers are named from the source root ("svo/node.h"), but no target has the source
# root on its include path. Each folder F gets an include directory of its own in the build tree,
# <build>/layer-include/F, that holds one entry: a symbolic link F -> <source>/F. A layer target
# puts that directory in its PUBLIC usage requirements, so a file sees "F/x.h" only when its
# target links F's target (directly or through a lower layer). Quoted includes are searched in
# the including file's own directory first; headers name each other from the root ("svo/x.h"),
# never by a relative path, so that first look finds nothing and the include path decides.
# A file that names a layer its target does not link fails to compile (tests/layers.cmake).
#
# Needs VOXLOD_ROOT (the source root) before it is included.

# The include directory that exposes folder `folder` of the source root, into out_var.
function(vx_folder_include folder out_var)
  set(dir ${CMAKE_BINARY_DIR}/layer-include/${folder})
  set(cur "")
  if(IS_SYMLINK ${dir}/${folder})
    file(READ_SYMLINK ${dir}/${folder} cur)
  endif()
  if(NOT cur STREQUAL "${VOXLOD_ROOT}/${folder}") # new, or the source tree moved
    file(REMOVE ${dir}/${folder})
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${VOXLOD_ROOT}/${folder} ${dir}/${folder} SYMBOLIC)
  endif()
  set(${out_var} ${dir} PARENT_SCOPE)
endfunction()

# vx_layer(<target> FOLDER <folder> SOURCES <files...> [DEPENDS <lower layer targets...>])
# A static, position-independent library of one folder's sources (they also go, as objects, into
# libvoxlod: lib/CMakeLists.txt). It sees its own folder, the folders of DEPENDS (and theirs) and
# the public headers (include/); linking it links its lower layers too.
function(vx_layer target)
  cmake_parse_arguments(L "" "FOLDER" "SOURCES;DEPENDS" ${ARGN})
  add_library(${target} STATIC ${L_SOURCES})
  vx_folder_include(${L_FOLDER} inc)
  target_include_directories(${target} PUBLIC ${inc} ${VOXLOD_ROOT}/include)
  target_link_libraries(${target} PUBLIC ${L_DEPENDS})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
