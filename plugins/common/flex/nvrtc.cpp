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

namespace {

// One NVRTC compilation: to a cubin for sm_<arch>, or (ltoir) to LTO-IR for compute_<arch>,
// relocatable, for nvJitLink.
NvrtcOutput compile(const std::string& source, const std::string& name, int arch,
                    const std::vector<std::string>& include_dirs, const std::vector<NvrtcHeader>& headers,
                    const std::vector<std::string>& name_expressions, bool ltoir) {
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
  const std::string target = std::to_string(arch) + (arch == 90 ? "a" : "");
  const std::string gpu = "--gpu-architecture=" + std::string(ltoir ? "compute_" : "sm_") + target;
  std::vector<std::string> options = {gpu, "--std=c++17", "-default-device", "--use_fast_math"};
  if (ltoir) {
    options.push_back("-dlto");
    options.push_back("--relocatable-device-code=true");
  }
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
                                                        nvrtc_version() + ", sm_" + target + "):\n" + out.log);
  }
  size_t size = 0;
  if (ltoir) {
    check(nvrtcGetLTOIRSize(program, &size), "LTO-IR size");
    out.cubin.resize(size);
    check(nvrtcGetLTOIR(program, out.cubin.data()), "LTO-IR");
  } else {
    check(nvrtcGetCUBINSize(program, &size), "cubin size");
    out.cubin.resize(size);
    check(nvrtcGetCUBIN(program, out.cubin.data()), "cubin");
  }
  for (const std::string& e : name_expressions) {
    const char* lowered = nullptr;
    check(nvrtcGetLoweredName(program, e.c_str(), &lowered), "lowered name");
    out.lowered_names.emplace_back(lowered);
  }
  return out;
}

}  // namespace

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, int arch,
                          const std::vector<std::string>& include_dirs, const std::vector<NvrtcHeader>& headers,
                          const std::vector<std::string>& name_expressions) {
  return compile(source, name, arch, include_dirs, headers, name_expressions, false);
}

std::string nvrtc_compile_ltoir(const std::string& source, const std::string& name, int arch) {
  return compile(source, name, arch, {}, {}, {}, true).cubin;
}

}  // namespace attnrt::kernels::flex
