#include <attnrt_kernels/flex/host_compiler.hpp>

#include <attnrt/status.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace attnrt::kernels::flex {
namespace {

// Runs argv with stdout and stderr into `log_path`; the exit status, or -1 (errno set) when
// it cannot start.
int run(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) {
    errno = started;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A compiler's messages, shortened for an error message: the first lines matter.
std::string first_lines(const std::string& log, size_t max_lines) {
  std::istringstream in(log);
  std::string line, out;
  for (size_t n = 0; std::getline(in, line); ++n) {
    if (n == max_lines) return out + "...";
    out += line + "\n";
  }
  return out;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

HostCompiler::HostCompiler(std::string version)
    : version_(std::move(version)), compiler_(env_or("ATTNRT_HOST_CXX", "c++")) {}

std::string HostCompiler::identity() {
  if (!identity_.empty()) return identity_;
  const std::string log = cache_->dir() + "/.version-" + std::to_string(::getpid()) + ".log";
  const int rc = run({compiler_, "--version"}, log);
  const std::string text = slurp(log);
  std::remove(log.c_str());
  if (rc != 0) {
    throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED,
                     "flex_attention on the CPU compiles the mods with the system C++ compiler, and '" + compiler_ +
                         "' " + (rc < 0 ? std::string("cannot be run: ") + std::strerror(errno) : "failed") +
                         " (set ATTNRT_HOST_CXX to a C++17 compiler)");
  }
  identity_ = text.substr(0, text.find('\n'));
  return identity_;
}

void HostCompiler::compile(const std::string& source, const std::string& output) const {
  const std::string src = output + ".cpp", log = output + ".log";
  {
    std::ofstream out(src);
    out << source;
    if (!out) throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention: cannot write " + src);
  }
  const int rc = run({compiler_, "-std=c++17", "-O2", "-fPIC", "-shared", "-w", "-o", output, src}, log);
  const std::string messages = slurp(log);
  std::remove(src.c_str());
  std::remove(log.c_str());
  if (rc != 0) {
    std::remove(output.c_str());
    throw sdk::Error(ATTNRT_ERROR_INVALID_ARGUMENT, "flex_attention: the mods do not compile (" + compiler_ +
                                                        ", exit " + std::to_string(rc) + "):\n" +
                                                        first_lines(messages, 30));
  }
}

std::shared_ptr<const CompiledMods> HostCompiler::get(const Mods& mods) {
  const std::string source = translation_unit(mods, Target::kHost);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!cache_) cache_.emplace(cache_dir());
  const std::string key = sha256_hex("attnrt flex host 1\n" + version_ + "\n" + identity() + "\n" + source);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
  auto compiled = std::make_shared<CompiledMods>();
  try {
    compiled->path = cache_->get_or_create(
        key + ".so", [&](const std::string& out) { compile(source, out); }, &compiled->cache_hit);
  } catch (sdk::Error& e) {
    if (!mods.source_name.empty())
      throw sdk::Error(e.status(), std::string(e.what()) + "(mods from " + mods.source_name + ")");
    throw;
  }
  try {
    compiled->library.load(compiled->path, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now);
    using ScoreFn = float(const attnrt_flex::Context*, float, int, int, int, int);
    using MaskFn = int(const attnrt_flex::Context*, int, int, int, int);
    if (!mods.score_mod.empty()) compiled->fns.score = &compiled->library.get<ScoreFn>(kHostScoreSymbol);
    if (!mods.mask_mod.empty()) compiled->fns.mask = &compiled->library.get<MaskFn>(kHostMaskSymbol);
    if (!mods.score_mod_grad.empty()) compiled->fns.grad = &compiled->library.get<ScoreFn>(kHostGradSymbol);
  } catch (const std::exception& e) {
    throw sdk::Error(ATTNRT_ERROR_INTERNAL,
                     "flex_attention: cannot load the compiled mods " + compiled->path + ": " + e.what());
  }
  loaded_.emplace(key, compiled);
  return compiled;
}

}  // namespace attnrt::kernels::flex
