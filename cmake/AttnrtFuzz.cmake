# ATTNRT_FUZZ=ON: a build of libattnrt and the libFuzzer targets of fuzz/ (tools/fuzz.sh makes it
# in build-fuzz/ and runs them). libFuzzer is clang's, so this build is clang's: every C and C++
# file is compiled with coverage for the fuzzer (fuzzer-no-link), AddressSanitizer and
# UndefinedBehaviorSanitizer, any UB report ending the run (-fno-sanitize-recover); the targets
# link libFuzzer's main (-fsanitize=fuzzer, fuzz/CMakeLists.txt).
#
# Only libattnrt: the CPU plugins and the harness's tensors use _Float16, which Debian 12's
# clang 14 lacks on x86-64 (cmake/AttnrtSanitize.cmake), and neither reads outside input. The
# safetensors header reader, which does, is compiled into its target from its own file.
# CUDA is off. System libraries (yaml-cpp, fmt) are not instrumented: a fault inside them still
# shows (ASan's SEGV handler), but the fuzzer sees coverage of attnrt's code only.
if(NOT ATTNRT_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ATTNRT_FUZZ=ON needs clang for C and C++ (libFuzzer is clang's; this is "
                      "${CMAKE_CXX_COMPILER_ID}): configure a fresh build folder with "
                      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++, as tools/fuzz.sh does")
endif()
if(ATTNRT_SANITIZE)
  message(FATAL_ERROR "ATTNRT_FUZZ=ON brings its own sanitizers (address, undefined); leave ATTNRT_SANITIZE empty")
endif()
set(ATTNRT_CUDA OFF)  # shadows the cache entry in this build
# -O1 and line tables: stack traces that name lines, at a speed the fuzzer can live with.
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link,address,undefined;-fno-sanitize-recover=all;-fno-omit-frame-pointer;-g;-O1>")
add_link_options(-fsanitize=address,undefined)
message(STATUS "attnrt: fuzz build (libFuzzer, ASan, UBSan); only libattnrt and fuzz/ are built, CUDA off")
