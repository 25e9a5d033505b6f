# ATTNRT_SANITIZE=thread: every C and C++ target compiled and linked with ThreadSanitizer
# (GCC's libtsan). tools/test.sh builds the threaded host-API test this way (issue 23;
# tests/CMakeLists.txt).
#
# OpenMP: TSan cannot see the synchronisation inside an uninstrumented OpenMP runtime. Under
# GCC's libgomp every parallel loop of the CPU plugins is reported as races between the threads
# of its team: false reports (each iteration writes its own elements, and the fork and the
# closing barrier order them with the calling thread), as are the caller's stack slots that a
# loop read and the caller reuses after it (the SDK's expected_shapes was one). Checked on a
# standalone loop: reported under libgomp, clean under libomp with Archer, and a real race added
# to the loop still reported there. LLVM's libomp implements libgomp's ABI and ships Archer
# (libarcher.so), an OMPT tool that tells TSan about OpenMP's forks, barriers, tasks and locks.
# So the plugins are built as usual (GCC's -fopenmp, instrumented like everything else), and a
# sanitized test links libomp, which then serves the plugins' GOMP_* calls, and starts Archer
# (tests/support/tsan_options.cpp). Debian: libomp-dev.
#
# Not clang: Debian 12's clang 14 has no _Float16 on x86-64 (the CPU kernels use it), and its
# shared TSan runtime, which --no-undefined plugins would need, crashes at start-up.
if(NOT ATTNRT_SANITIZE)
  return()
endif()
if(NOT ATTNRT_SANITIZE STREQUAL "thread")
  message(FATAL_ERROR "ATTNRT_SANITIZE=${ATTNRT_SANITIZE}: only 'thread' is supported")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(FATAL_ERROR "ATTNRT_SANITIZE=thread is a GCC build (cmake/AttnrtSanitize.cmake says why)")
endif()
file(GLOB _attnrt_llvm_libdirs LIST_DIRECTORIES true /usr/lib/llvm-*/lib)
find_file(ATTNRT_TSAN_ARCHER libarcher.so HINTS ${_attnrt_llvm_libdirs} DOC "LLVM OpenMP's Archer tool")
if(NOT ATTNRT_TSAN_ARCHER)
  message(FATAL_ERROR "ATTNRT_SANITIZE=thread needs LLVM's OpenMP runtime with Archer (libarcher.so; Debian: "
                      "apt-get install libomp-dev), so that TSan sees OpenMP's synchronisation")
endif()
get_filename_component(_attnrt_archer_dir ${ATTNRT_TSAN_ARCHER} DIRECTORY)
find_file(ATTNRT_TSAN_LIBOMP NAMES libomp.so.5 libomp.so HINTS ${_attnrt_archer_dir} NO_DEFAULT_PATH
          DOC "LLVM's OpenMP runtime, beside Archer")
if(NOT ATTNRT_TSAN_LIBOMP)
  message(FATAL_ERROR "no libomp beside ${ATTNRT_TSAN_ARCHER}")
endif()
# Line tables, so that reports name files and lines; -O1, TSan's advice, also compiles in two
# thirds of -O3's time.
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=thread;-g1;-O1>")
add_link_options(-fsanitize=thread)
message(STATUS "attnrt: ThreadSanitizer build; OpenMP through ${ATTNRT_TSAN_LIBOMP} and Archer")
