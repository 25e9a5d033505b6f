// Helpers shared by the tests: where the build put plugins and fixtures, a backend by name,
// running the CLI, and reading a whole file.
#pragma once

#include <attnrt/runtime/backend.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/registry.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

namespace attnrt::test {

inline std::filesystem::path fixtures() { return ATTNRT_TEST_FIXTURES; }
inline std::filesystem::path plugins_dir() { return ATTNRT_TEST_PLUGINS; }
inline std::filesystem::path source_dir() { return ATTNRT_SOURCE_DIR; }

// Why a CUDA plugin cannot run on the CPU in this build: it exists (and says the CPU is not its
// device) when its toolchain was found at configure time (nvcc; CUTLASS for flash_attention_3),
// else it is not installed.
inline std::string cuda_plugin_reason_on_cpu(const std::string& name) {
  return std::filesystem::exists(plugins_dir() / name) ? "device cpu is not supported" : "not installed";
}
inline std::string fa2_reason_on_cpu() { return cuda_plugin_reason_on_cpu("flash_attention_2"); }

// A backend for one of the built-in plugins ("eager", "sdpa").
inline std::shared_ptr<Backend> builtin_backend(const std::string& name) {
  static Registry registry({plugins_dir()});
  const PluginRecord* rec = registry.find(name);
  if (!rec) throw std::runtime_error("plugin not built: " + name);
  return std::make_shared<Backend>(registry.load(*rec));
}

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the attnrt CLI with `args` (shell words) from `cwd`; captures stdout+stderr.
inline CommandResult run_cli(const std::string& args, const std::string& env = "",
                             const std::filesystem::path& cwd = ATTNRT_SOURCE_DIR) {
  const std::string cmd =
      "cd '" + cwd.string() + "' && " + env + " '" + std::string(ATTNRT_TEST_CLI) + "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("attnrt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

// The attnrt::Error a call throws, as "<status name>|<message>"; "" when it does not throw.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return std::string(status_name(e.status())) + "|" + e.what();
  }
  return "";
}

}  // namespace attnrt::test
