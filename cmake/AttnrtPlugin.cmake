# attnrt_add_plugin(NAME <name> SOURCES <files...> MANIFEST <plugin.yaml> [LIBRARIES <libs...>])
#
# Builds an attnrt plugin: a shared library lib<attnrt_NAME>.so that exports exactly one
# symbol (attnrt_plugin_entry; a linker version script hides everything else, including
# template instantiations that -fvisibility=hidden would leave visible), placed with its
# manifest in <plugins dir>/<name>/ (attnrt's build) or <binary dir>/<name>/ (an out-of-tree
# project): a folder that can be dropped into any plugin directory or named by path.
set(_ATTNRT_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(attnrt_add_plugin)
  cmake_parse_arguments(ARG "" "NAME;MANIFEST;OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "attnrt_add_plugin: NAME and SOURCES are required")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    if(ATTNRT_PLUGIN_OUTPUT_DIR)  # inside attnrt's own build
      set(ARG_OUTPUT_DIR ${ATTNRT_PLUGIN_OUTPUT_DIR}/${ARG_NAME})
    else()                        # a third-party project using the installed package
      set(ARG_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME})
    endif()
  endif()
  set(target attnrt_${ARG_NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE attnrt::sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    SUFFIX ".so"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR}
    # Installed as <libdir>/attnrt/plugins/<name>/: libraries shipped beside libattnrt resolve.
    INSTALL_RPATH "$ORIGIN/../../..")
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${_ATTNRT_PLUGIN_CMAKE_DIR}/plugin.map" "LINKER:--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_ATTNRT_PLUGIN_CMAKE_DIR}/plugin.map)
  if(ARG_MANIFEST)
    configure_file(${ARG_MANIFEST} ${ARG_OUTPUT_DIR}/plugin.yaml COPYONLY)
  endif()
endfunction()
