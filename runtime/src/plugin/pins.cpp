#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/pins.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include <fcntl.h>
#include <unistd.h>

#include "digest.hpp"

namespace attnrt {
namespace fs = std::filesystem;

namespace {

bool is_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string origins(const std::vector<PluginPin>& pins) {
  std::string s;
  for (const PluginPin& p : pins) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", p.sha256, p.origin);
  return s;
}

}  // namespace

std::string sha256_of_fd(int fd, const std::string& where) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error(ATTNRT_ERROR_INTERNAL, where + ": OpenSSL could not start a sha256");
  std::vector<unsigned char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(ATTNRT_ERROR_UNSUPPORTED, where + ": cannot be read to check its sha256: " + std::strerror(errno));
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(n));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::string sha256_of_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path.string() + ": cannot be opened: " + std::strerror(errno));
  try {
    std::string hex = sha256_of_fd(fd, path.string());
    ::close(fd);
    return hex;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

void PluginPins::add(PluginPin pin) {
  if (pin.sha256.rfind("sha256:", 0) == 0) pin.sha256 = pin.sha256.substr(7);
  if (!is_digest(pin.sha256)) {
    throw Error(fmt::format("{}: the sha256 pin of '{}' must be 64 lowercase hex digits (sha256sum's output), not '{}'",
                            pin.origin, pin.name, shorten_for_message(pin.sha256)));
  }
  by_digest_.emplace(pin.sha256, pin);
  by_name_[pin.name].push_back(std::move(pin));
}

void PluginPins::require_every_library(std::string lockfile) { lockfile_ = std::move(lockfile); }

std::string PluginPins::refusal(const std::string& name, const std::string& sha256) const {
  if (!name.empty()) {
    if (auto it = by_name_.find(name); it != by_name_.end()) {
      for (const PluginPin& p : it->second)
        if (p.sha256 == sha256) return "";
      return fmt::format(
          "refused: its sha256 is {}, but '{}' is pinned to {}; the file changed since it was pinned "
          "(if the change is yours, pin the new digest or run 'attnrt lock' again)",
          sha256, name, origins(it->second));
    }
  }
  if (lockfile_.empty()) return "";
  if (auto it = by_digest_.find(sha256); it != by_digest_.end()) {
    if (name.empty() || name == it->second.name) return "";
    return fmt::format("refused: its sha256 {} is pinned for '{}' ({}), not for '{}'", sha256, it->second.name,
                       it->second.origin, name);
  }
  return fmt::format(
      "refused: its sha256 {} is not in the lockfile {}{}; only locked plugins are loaded (run "
      "'attnrt lock' to add it, after checking where it came from)",
      sha256, lockfile_, name.empty() ? "" : fmt::format(", which has no pin for '{}'", name));
}

PluginPins read_lockfile(const fs::path& path) {
  const YAML::Node root = load_yaml_file(path);
  const std::string file = path.string();
  auto at = [&](const YAML::Node& n) { return fmt::format("{}:{}:{}", file, n.Mark().line + 1, n.Mark().column + 1); };
  if (!root.IsMap() || !root["plugins"] || !root["plugins"].IsSequence())
    throw Error(file + ": not an attnrt lockfile (a mapping with a 'plugins' list; 'attnrt lock' writes one)");
  if (const YAML::Node v = root["version"]; !v || !v.IsScalar() || v.Scalar() != "1")
    throw Error(fmt::format("{}: lockfile version {} is not 1, the version this attnrt reads", file,
                            v && v.IsScalar() ? "'" + shorten_for_message(v.Scalar()) + "'" : "(none)"));
  PluginPins pins;
  for (const YAML::Node& entry : root["plugins"]) {
    if (!entry.IsMap() || !entry["name"] || !entry["sha256"] || !entry["name"].IsScalar() ||
        !entry["sha256"].IsScalar())
      throw Error(at(entry) + ": a lockfile entry needs 'name' and 'sha256'");
    pins.add({entry["name"].Scalar(), entry["sha256"].Scalar(), at(entry["sha256"])});
  }
  pins.require_every_library(file);
  return pins;
}

void write_lockfile(const fs::path& path, const std::vector<LockEntry>& entries, const std::string& generated_by) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "version" << YAML::Value << 1 << YAML::Key << "plugins" << YAML::Value
      << YAML::BeginSeq;
  for (const LockEntry& e : entries) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << e.name << YAML::Key << "version" << YAML::Value
        << YAML::DoubleQuoted << e.version << YAML::Key << "sha256" << YAML::Value << e.sha256 << YAML::Key << "library"
        << YAML::Value << e.library.string() << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(path.string() + ": cannot be written: " + std::strerror(errno));
    f << "# attnrt lockfile: the sha256 of every plugin library the configuration can resolve to.\n"
      << "# Written by: " << generated_by << "\n"
      << "# Use it with 'attnrt.lockfile: " << path.filename().string() << "': then only these files are loaded.\n"
      << out.c_str() << "\n";
    if (!f) throw Error(path.string() + ": cannot be written");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);  // whole or not at all
  if (ec) throw Error(path.string() + ": cannot be written: " + ec.message());
}

}  // namespace attnrt
