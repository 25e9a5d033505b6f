// AddressSanitizer's settings for a test of a -DATTNRT_SANITIZE=address build, compiled into its
// executable: the ASan runtime reads this hook at start-up (ASAN_OPTIONS still overrides).
// LeakSanitizer's hooks are in lsan_hooks.cpp, which the attnrt command gets too.
extern "C" {

// malloc's contract: an allocation that cannot be made returns NULL (ASan's default is to end
// the process). The status tests ask for a 2^62-byte workspace on purpose and expect
// ATTNRT_ERROR_OUT_OF_MEMORY from the runtime's aligned_alloc.
const char* __asan_default_options() { return "allocator_may_return_null=1"; }

}  // extern "C"
