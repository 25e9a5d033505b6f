// The on-disk cache of compiled flex_attention mods (shared objects for the CPU path, cubins for
// CUDA): one folder, entries named by a key that covers everything the compiled bytes depend
// on, each written to a temporary file and renamed into place under the folder's file lock, with
// a SHA-256 digest beside it so that a truncated or corrupt entry is detected and rebuilt.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace attnrt::kernels::flex {

// Lower-case hex SHA-256 of `bytes` (OpenSSL's EVP interface).
std::string sha256_hex(std::string_view bytes);

// Where compiled mods live: $ATTNRT_CACHE_DIR/flex, else $XDG_CACHE_HOME/attnrt/flex, else
// $HOME/.cache/attnrt/flex; created (mode 0700) when missing. When that folder cannot be made
// or written, a private folder under $TMPDIR (or /tmp) instead, and `note` says why.
std::string cache_dir(std::string* note = nullptr);

class DiskCache {
 public:
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // The path of the entry `name` (a key plus suffix, [0-9a-z._-]), made by produce(path) when
  // missing or when its bytes do not match its digest. produce writes the entry's bytes to the
  // path it is given (a temporary name in the folder) or throws; the entry is published by
  // rename, so a reader never sees a half-written one. Concurrent callers (threads or
  // processes) produce an entry once: the folder's lock is held while producing. `hit` says
  // whether the entry was already there.
  std::string get_or_create(const std::string& name, const std::function<void(const std::string&)>& produce,
                            bool* hit = nullptr) const;

 private:
  std::string dir_;
};

}  // namespace attnrt::kernels::flex
