#include <attnrt_kernels/flex/nvrtc.hpp>

#include <attnrt/status.hpp>

#include <nvrtc.h>

#include <memory>
#include <vector>

namespace attnrt::kernels::flex {
namespace {

void check(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_INTERNAL, std::string("NVRTC ") + what + ": " + nvrtcGetErrorString(r));
  }
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "version");
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& include_dirs, const std::vector<NvrtcHeader>& headers,
                          const std::vector<std::string>& name_expressions) {
  std::vector<const char*> header_texts, header_names;
  for (const NvrtcHeader& h : headers) {
    header_texts.push_back(h.text.c_str());
    header_names.push_back(h.include_name.c_str());
  }
  nvrtcProgram program = nullptr;
  check(nvrtcCreateProgram(&program, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                           header_texts.data(), header_names.data()),
        "create");
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&program,
                                                               [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  // sm_90a: wgmma and setmaxnreg exist only on the arch-specific target.
  const std::string gpu = "--gpu-architecture=sm_" + std::to_string(arch) + (arch == 90 ? "a" : "");
  std::vector<std::string> options = {gpu, "--std=c++17", "-default-device", "--use_fast_math"};
  for (const std::string& dir : include_dirs) options.push_back("--include-path=" + dir);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  for (const std::string& e : name_expressions) check(nvrtcAddNameExpression(program, e.c_str()), "name expression");
  const nvrtcResult compiled = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  NvrtcOutput out;
  size_t log_size = 0;
  check(nvrtcGetProgramLogSize(program, &log_size), "log size");
  out.log.resize(log_size);
  if (log_size > 0) check(nvrtcGetProgramLog(program, out.log.data()), "log");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    throw sdk::Error(ATTNRT_ERROR_INVALID_ARGUMENT, "flex_attention: the mods do not compile (NVRTC " +
                                                        nvrtc_version() + ", " + gpu.substr(21) + "):\n" + out.log);
  }
  size_t size = 0;
  check(nvrtcGetCUBINSize(program, &size), "cubin size");
  out.cubin.resize(size);
  check(nvrtcGetCUBIN(program, out.cubin.data()), "cubin");
  for (const std::string& e : name_expressions) {
    const char* lowered = nullptr;
    check(nvrtcGetLoweredName(program, e.c_str(), &lowered), "lowered name");
    out.lowered_names.emplace_back(lowered);
  }
  return out;
}

}  // namespace attnrt::kernels::flex
