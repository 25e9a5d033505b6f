#include <attnrt_kernels/flex/disk_cache.hpp>

#include <attnrt/status.hpp>

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnrt::kernels::flex {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw sdk::Error(ATTNRT_ERROR_INTERNAL, "flex_attention cache: " + what);
}

// mkdir -p with mode 0700 for what it creates; false (errno set) when a component cannot be made.
bool make_dirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::access(path.c_str(), W_OK | X_OK) == 0;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return static_cast<bool>(in) || in.eof();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) fail("cannot write " + path + ": " + std::strerror(errno));
}

// The entry's bytes match the digest written beside it.
bool valid(const std::string& path) {
  std::string bytes, digest;
  if (!read_file(path, &bytes) || !read_file(path + ".sha256", &digest)) return false;
  return !bytes.empty() && digest == sha256_hex(bytes);
}

// flock on <dir>/.lock for a scope: serializes producers across threads and processes.
class FolderLock {
 public:
  explicit FolderLock(const std::string& dir)
      : fd_(::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ < 0) fail("cannot open " + dir + "/.lock: " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("cannot lock " + dir + "/.lock: " + std::strerror(errno));
    }
  }
  ~FolderLock() { ::close(fd_); }  // closing releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) {
    fail("SHA-256 failed (OpenSSL)");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) (out += hex[digest[i] >> 4]) += hex[digest[i] & 15];
  return out;
}

std::string cache_dir(std::string* note) {
  std::string base = env("ATTNRT_CACHE_DIR");
  if (base.empty() && !env("XDG_CACHE_HOME").empty()) base = env("XDG_CACHE_HOME") + "/attnrt";
  if (base.empty() && !env("HOME").empty()) base = env("HOME") + "/.cache/attnrt";
  const std::string wanted = base.empty() ? "" : base + "/flex";
  if (!wanted.empty() && make_dirs(wanted)) return wanted;
  const std::string why = wanted.empty() ? "no ATTNRT_CACHE_DIR, XDG_CACHE_HOME or HOME" : std::strerror(errno);
  std::string tmp = env("TMPDIR").empty() ? "/tmp" : env("TMPDIR");
  const std::string fallback = tmp + "/attnrt-cache-" + std::to_string(::getuid()) + "/flex";
  if (!make_dirs(fallback)) fail("no usable folder: " + (wanted.empty() ? why : wanted + ": " + why) + "; " + fallback);
  if (note)
    *note = "cache folder " + (wanted.empty() ? std::string("unset") : wanted) + " unusable (" + why + "); using " +
            fallback;
  return fallback;
}

std::string DiskCache::get_or_create(const std::string& name, const std::function<void(const std::string&)>& produce,
                                     bool* hit) const {
  const std::string path = dir_ + "/" + name;
  if (valid(path)) {
    if (hit) *hit = true;
    return path;
  }
  FolderLock lock(dir_);
  if (valid(path)) {  // another producer finished while we waited
    if (hit) *hit = true;
    return path;
  }
  if (hit) *hit = false;
  std::ostringstream tid;
  tid << std::this_thread::get_id();
  const std::string tmp = dir_ + "/.tmp-" + std::to_string(::getpid()) + "-" + tid.str() + "-" + name;
  try {
    produce(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  std::string bytes;
  if (!read_file(tmp, &bytes) || bytes.empty()) {
    std::remove(tmp.c_str());
    fail("the compiler left no output for " + name);
  }
  // Digest first, then the bytes: a crash in between leaves a digest that matches nothing.
  write_file(tmp + ".sha256", sha256_hex(bytes));
  if (std::rename((tmp + ".sha256").c_str(), (path + ".sha256").c_str()) != 0 ||
      std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string error = std::strerror(errno);
    std::remove(tmp.c_str());
    std::remove((tmp + ".sha256").c_str());
    fail("cannot publish " + path + ": " + error);
  }
  return path;
}

}  // namespace attnrt::kernels::flex
