// LeakSanitizer's settings for a -DATTNRT_SANITIZE=address build, compiled into every test
// executable and into the attnrt command (which the CLI tests run, and `attnrt check` forks): the
// runtime reads these hooks at start-up (LSAN_OPTIONS still overrides).
extern "C" {

// LeakSanitizer does not scan thread-local storage as a root: GCC 12's LeakSanitizer misreads the
// bounds of the dynamic TLS of a library opened with dlopen on Debian 12's glibc 2.36 (libdnnl,
// which the CPU sdpa plugin opens, keeps thread_local state) and its tracer died with SIGSEGV at
// exit ("DTLS 7 at 0x00010000058b-0x00250000168d", then "Tracer caught signal 11"), failing
// tests that had passed. Without TLS as a root LeakSanitizer can only report more, never less.
// print_suppressions=0: the CLI tests parse the command's output, where the table of used
// suppressions would otherwise follow the JSON.
const char* __lsan_default_options() { return "use_tls=0:print_suppressions=0"; }

// What is reachable only through thread-local storage then looks leaked: glibc's node for each
// thread_local destructor a live thread registered (the sdpa plugin's per-thread oneDNN
// primitives), glibc's per-thread dlerror() message, libgomp's per-thread team state and libdnnl's
// own per-thread state.
const char* __lsan_default_suppressions() {
  return "leak:__cxa_thread_atexit_impl\nleak:_dlerror_run\nleak:_dl_exception_create\nleak:libgomp.so\n"
         "leak:libdnnl.so\n";
}

}  // extern "C"
