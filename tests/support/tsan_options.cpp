// ThreadSanitizer's settings for a test of a -DATTNRT_SANITIZE=thread build, compiled into its
// executable: the TSan runtime reads these hooks at start-up (TSAN_OPTIONS still overrides).
// The executable links LLVM's libomp, which serves the plugins' OpenMP calls with Archer
// started (cmake/AttnrtSanitize.cmake says why).
#include <omp.h>

#include <cstdlib>

extern "C" {

// Any report fails the test: exit status 66, after every report is printed.
const char* __tsan_default_options() { return "exitcode=66:second_deadlock_stack=1"; }

// libomp is not instrumented: what it passes to TSan's interceptors (its own mutexes and memory)
// is none of our accesses, and its synchronisation reaches TSan through Archer instead. (This is
// what Archer's start-up line "please export TSAN_OPTIONS='ignore_noninstrumented_modules=1'"
// asks for, for libomp alone.)
// libdnnl (oneDNN, the CPU sdpa plugin's products) is not instrumented either, and its own
// synchronisation (the primitive cache, shared kernel objects) is invisible to TSan: its memcmp,
// memcpy and free calls were reported as races against each other across threads.
const char* __tsan_default_suppressions() { return "called_from_lib:libomp.so\ncalled_from_lib:libdnnl.so\n"; }

}  // extern "C"

namespace {

// libomp reads OMP_TOOL_LIBRARIES when it initialises, on the first OpenMP call: this one, before
// any plugin is loaded, so Archer watches every parallel region of the process.
const int kOpenMPThreads = (setenv("OMP_TOOL_LIBRARIES", ATTNRT_TSAN_ARCHER, 0), omp_get_max_threads());

}  // namespace
