// sha256 of an open file, for PluginLibrary::open: hashing the descriptor it then compares with
// the path it loads (same device and inode) leaves no window to swap the file unnoticed.
#pragma once

#include <string>

namespace attnrt {

// 64 lowercase hex digits of everything readable from `fd` (read from its current offset).
// Throws attnrt::Error naming `where` on a read error.
std::string sha256_of_fd(int fd, const std::string& where);

}  // namespace attnrt
