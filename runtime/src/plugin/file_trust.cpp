// The rule is OpenSSH's for files it trusts (auth2-pubkeyfile.c, safe_path): owned by the user or
// root, and not writable by group or others; group-writable is accepted for the owner's private
// group (below).
#include "file_trust.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace attnrt {

bool writable_plugins_allowed_by_environment() {
  const char* v = std::getenv("ATTNRT_ALLOW_WRITABLE_PLUGINS");
  if (v == nullptr) return false;
  const std::string s(v);
  return s == "1" || s == "true" || s == "yes";
}

namespace {

// Ubuntu's default umask (002) makes a user's own files group-writable, with the user's private
// group (the owner's primary group, named after the owner, with no other members): writable by
// nobody else, so that is not refused.
bool private_group_of_owner(uid_t uid, gid_t gid) {
  const passwd* pw = ::getpwuid(uid);
  if (pw == nullptr || pw->pw_gid != gid) return false;
  const group* gr = ::getgrgid(gid);
  if (gr == nullptr || std::strcmp(gr->gr_name, pw->pw_name) != 0) return false;
  for (char** member = gr->gr_mem; member && *member; ++member) {
    if (std::strcmp(*member, pw->pw_name) != 0) return false;
  }
  return true;
}

}  // namespace

std::string writable_by_others(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fmt::format("cannot be examined ({})", std::strerror(errno));
  const char* kind = S_ISDIR(st.st_mode) ? "folder" : "file";
  const unsigned mode = st.st_mode & 07777;
  if (st.st_mode & S_IWOTH) return fmt::format("{} writable by every user (mode {:04o})", kind, mode);
  if ((st.st_mode & S_IWGRP) && !private_group_of_owner(st.st_uid, st.st_gid))
    return fmt::format("{} writable by its group (gid {}, mode {:04o})", kind, st.st_gid, mode);
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return fmt::format("{} owned by uid {}, neither this user (uid {}) nor root", kind, st.st_uid, me);
  }
  return "";
}

const char* writable_plugins_override_hint() {
  return "fix its permissions (chmod go-w), or allow it on purpose with 'attnrt.allow_writable_plugins: true' or "
         "ATTNRT_ALLOW_WRITABLE_PLUGINS=1";
}

}  // namespace attnrt
