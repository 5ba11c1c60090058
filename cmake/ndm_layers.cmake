# The library's layers (docs/architecture.md, "Layers"), enforced by the build:
# each folder of src/ is an object library, ndm_<folder>, that compiles with an
# include "view" of src/ instead of src/ itself. The view is a directory of the
# build tree, layers/<folder>/, holding one symbolic link per folder the layer
# may use (its own, the folders named after USES, and theirs in turn), so that
# src/transport's `#include "io/endpoint.hpp"` finds no io/ and fails to
# compile. All of src/ includes as "folder/file.hpp" relative to src/, and a
# quoted include is looked up beside the including file first, then in the
# view: a folder outside the view is not there. scripts/check_layering.sh keeps
# what a compiler cannot see: the public headers a layer includes, a "../"
# path, and the trees outside src/.
#
# ndm_layer(<folder> [USES <folder>...]): USES names the layers below it that
# the folder may include directly; each must be declared before. Every folder
# of src/ must have a line (ndm_check_layers), so a new one is layered at once.
# The .cpp files of the folder (and its subfolders) are globbed at every build,
# so new files are picked up without touching this list.
function(ndm_layer folder)
  cmake_parse_arguments(PARSE_ARGV 1 layer "" "" "USES")
  set(view ${folder})
  foreach(dep IN LISTS layer_USES)
    if(NOT DEFINED NDM_LAYER_VIEW_${dep})
      message(FATAL_ERROR "ndm_layer(${folder}): ${dep} is not declared before it (cmake/ndm_layers.cmake)")
    endif()
    list(APPEND view ${NDM_LAYER_VIEW_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES view)
  set(NDM_LAYER_VIEW_${folder} ${view} PARENT_SCOPE)
  set(NDM_LAYERS ${NDM_LAYERS} ${folder} PARENT_SCOPE)

  # The view: a link per visible folder; links of folders no longer visible
  # are removed (file(REMOVE) takes the link, never what it points to).
  set(dir ${PROJECT_BINARY_DIR}/layers/${folder})
  file(MAKE_DIRECTORY ${dir})
  file(GLOB old LIST_DIRECTORIES true ${dir}/*)
  foreach(entry IN LISTS old)
    get_filename_component(entry_name ${entry} NAME)
    if(NOT entry_name IN_LIST view)
      file(REMOVE ${entry})
    endif()
  endforeach()
  foreach(visible IN LISTS view)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${visible} ${dir}/${visible} SYMBOLIC)
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${folder}/*.cpp)
  if(NOT sources)
    message(FATAL_ERROR "src/${folder} has no .cpp file to build")
  endif()
  add_library(ndm_${folder} OBJECT ${sources})
  set_target_properties(ndm_${folder} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden)
  # Calls inside the library to its exported functions need not go through the PLT.
  target_compile_options(ndm_${folder} PRIVATE -fno-semantic-interposition)
  target_include_directories(ndm_${folder} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${dir})
  target_link_libraries(ndm_${folder} PUBLIC Threads::Threads PRIVATE ${NDM_PRIVATE_LIBS})
endfunction()

# Every folder of src/ has its layer.
function(ndm_check_layers)
  file(GLOB entries LIST_DIRECTORIES true CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*)
  foreach(entry IN LISTS entries)
    get_filename_component(folder ${entry} NAME)
    # (a folder left empty by a move, as git leaves it, is no layer)
    file(GLOB_RECURSE files ${entry}/*.cpp ${entry}/*.hpp)
    if(IS_DIRECTORY ${entry} AND files AND NOT folder IN_LIST NDM_LAYERS)
      message(FATAL_ERROR "src/${folder} has no layer: add an ndm_layer(${folder} USES ...) line to "
                          "CMakeLists.txt (cmake/ndm_layers.cmake, docs/architecture.md)")
    endif()
  endforeach()
endfunction()
