# Warning flags for attnrt's own targets; ATTNRT_WERROR (on in CI) makes them errors.
function(attnrt_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-psabi -Wshadow=local -Wnon-virtual-dtor
      # GCC 12 false positive on std::string concatenation (GCC bug 105329)
      -Wno-restrict>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(ATTNRT_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()
