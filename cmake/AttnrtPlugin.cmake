# attnrt_add_plugin(NAME <name> SOURCES <files...>
#                   [ALIASES <names...>] [LIBRARIES <libs...>] [OUTPUT_DIR <dir>]
#                   [INSTALL_DESTINATION <dir>] [MANIFEST <plugin.yaml> | NO_MANIFEST])
#
# Builds an attnrt plugin: a shared library lib<attnrt_NAME>.so that exports exactly one
# symbol (attnrt_plugin_entry; a linker version script hides everything else, including
# template instantiations that -fvisibility=hidden would leave visible), placed with its
# manifest in <plugins dir>/<name>/ (attnrt's build) or <binary dir>/<name>/ (an out-of-tree
# project): a folder that can be dropped into any plugin directory or named by path.
#
# The manifest (plugin.yaml) is written after every link by attnrt_plugin_manifest from the
# library's own metadata (name, version, description, devices: the plugin's code is the one
# place they are written) plus ALIASES. MANIFEST copies a hand-written one instead (attnrt
# check's `manifest` check compares it with the library); NO_MANIFEST writes none.
# INSTALL_DESTINATION installs the library and its manifest into that folder.
set(_ATTNRT_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(attnrt_add_plugin)
  cmake_parse_arguments(ARG "NO_MANIFEST" "NAME;MANIFEST;OUTPUT_DIR;INSTALL_DESTINATION" "SOURCES;LIBRARIES;ALIASES"
                        ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCES)
    message(FATAL_ERROR "attnrt_add_plugin: NAME and SOURCES are required")
  endif()
  if(ARG_MANIFEST AND ARG_NO_MANIFEST)
    message(FATAL_ERROR "attnrt_add_plugin(${ARG_NAME}): MANIFEST and NO_MANIFEST exclude each other")
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
  if(ATTNRT_PLUGIN_OUTPUT_DIR AND ARG_OUTPUT_DIR STREQUAL "${ATTNRT_PLUGIN_OUTPUT_DIR}/${ARG_NAME}")
    # One of attnrt's own plugins: the Python package ships every one built (python/CMakeLists.txt).
    set_property(GLOBAL APPEND PROPERTY ATTNRT_BUILTIN_PLUGINS ${ARG_NAME})
  endif()
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

  set(manifest ${ARG_OUTPUT_DIR}/plugin.yaml)
  if(ARG_MANIFEST)
    configure_file(${ARG_MANIFEST} ${manifest} COPYONLY)
  elseif(NOT ARG_NO_MANIFEST)
    set(alias_args "")
    foreach(alias IN LISTS ARG_ALIASES)
      list(APPEND alias_args --alias ${alias})
    endforeach()
    # In attnrt's build the tool is a target of this project (build it first); installed, an
    # imported executable of the package.
    get_target_property(tool_target attnrt::plugin_manifest ALIASED_TARGET)
    if(tool_target)
      add_dependencies(${target} ${tool_target})
    endif()
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND $<TARGET_FILE:attnrt::plugin_manifest> $<TARGET_FILE:${target}> ${manifest} ${alias_args}
      COMMENT "Writing the manifest of plugin ${ARG_NAME}"
      VERBATIM)
  endif()

  if(ARG_INSTALL_DESTINATION)
    install(TARGETS ${target} LIBRARY DESTINATION ${ARG_INSTALL_DESTINATION})
    if(ARG_MANIFEST OR NOT ARG_NO_MANIFEST)
      install(FILES ${manifest} DESTINATION ${ARG_INSTALL_DESTINATION})
    endif()
  endif()
endfunction()
