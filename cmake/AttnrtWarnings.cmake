# Warning flags for attnrt's own targets; ATTNRT_WERROR (on in CI) makes them errors.
function(attnrt_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-psabi -Wnon-virtual-dtor>
    # GCC's spelling (clang builds, the fuzz build's, have no -Wshadow=local); -Wno-restrict: GCC
    # 12 false positive on std::string concatenation (GCC bug 105329)
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wshadow=local -Wno-restrict>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(ATTNRT_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()
