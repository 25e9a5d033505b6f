# ATTNRT_SANITIZE: every C and C++ target compiled and linked with GCC's sanitizers.
#   thread   ThreadSanitizer (libtsan); tools/test.sh builds the threaded host-API test this way
#            (issue 23; tests/CMakeLists.txt).
#   address  AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer; any report
#            ends the process (-fno-sanitize-recover for UB), so it fails the test it is in.
#            tools/test.sh builds every CPU test this way in build-asan (issue 19; CUDA off).
#
# thread and OpenMP: TSan cannot see the synchronisation inside an uninstrumented OpenMP runtime.
# Under GCC's libgomp every parallel loop of the CPU plugins is reported as races between the
# threads of its team: false reports (each iteration writes its own elements, and the fork and the
# closing barrier order them with the calling thread), as are the caller's stack slots that a loop
# read and the caller reuses after it (the SDK's expected_shapes was one). Checked on a standalone
# loop: reported under libgomp, clean under libomp with Archer, and a real race added to the loop
# still reported there. LLVM's libomp implements libgomp's ABI and ships Archer (libarcher.so), an
# OMPT tool that tells TSan about OpenMP's forks, barriers, tasks and locks. So the plugins are
# built as usual (GCC's -fopenmp, instrumented like everything else), and a sanitized test links
# libomp, which then serves the plugins' GOMP_* calls, and starts Archer
# (tests/support/tsan_options.cpp). Debian: libomp-dev.
#
# Not clang: Debian 12's clang 14 has no _Float16 on x86-64 (the CPU kernels use it), and its
# shared TSan runtime, which --no-undefined plugins would need, crashes at start-up.
if(NOT ATTNRT_SANITIZE)
  return()
endif()
if(NOT ATTNRT_SANITIZE STREQUAL "thread" AND NOT ATTNRT_SANITIZE STREQUAL "address")
  message(FATAL_ERROR "ATTNRT_SANITIZE=${ATTNRT_SANITIZE}: 'thread' or 'address' (address + undefined)")
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(FATAL_ERROR "ATTNRT_SANITIZE=${ATTNRT_SANITIZE} is a GCC build (cmake/AttnrtSanitize.cmake says why)")
endif()
if(ATTNRT_SANITIZE STREQUAL "address")
  # -O1 and line tables, as for TSan; frame pointers for ASan's fast unwinder (reports and LSan's
  # allocation stacks). The CPU plugins are instrumented too: they run inside the tests. GCC's
  # -fsanitize=undefined leaves out float-cast-overflow (a float converted to an integer that
  # cannot hold it): added. _GLIBCXX_ASSERTIONS: libstdc++'s bounds checks (operator[] of vector,
  # string, span), which ASan misses inside a vector's capacity. What tests need to run here:
  # tests/support/asan_options.cpp, the crasher fixture's flags (tests/CMakeLists.txt), and the
  # leak check's reading of ASan's heap (runtime/harness/src/check/leak_check.cpp).
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined,float-cast-overflow;-fno-sanitize-recover=undefined,float-cast-overflow;-fno-omit-frame-pointer;-g1;-O1>"
    "$<$<COMPILE_LANGUAGE:CXX>:-D_GLIBCXX_ASSERTIONS>")
  add_link_options(-fsanitize=address,undefined,float-cast-overflow)
  message(STATUS "attnrt: AddressSanitizer + UndefinedBehaviorSanitizer build")
  return()
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
