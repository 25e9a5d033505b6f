// sha256 pins and lockfiles (pins.hpp, issue 19): a pinned plugin whose file changed is refused
// before it is loaded, with both digests and where the pin was set; with a lockfile only locked
// libraries load; malformed pins and lockfiles are clear errors with their position.
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/pins.hpp>
#include <attnrt/runtime/registry.hpp>
#include <attnrt/runtime/settings.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_support.hpp"

namespace attnrt {
namespace {

namespace fs = std::filesystem;
using test::fixtures;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const fs::path kCReference = "plugins/c_reference/libattnrt_c_reference.so";

// A folder holding a copy of the plain-C reference plugin as a loose library.
struct PluginCopy {
  test::TempDir dir;
  fs::path library;
  PluginCopy() : library(dir.path() / "libattnrt_c_reference.so") { fs::copy_file(fixtures() / kCReference, library); }
  // One byte more at the end: still a sound, loadable ELF file, no longer the same file.
  void tamper() const { std::ofstream(library, std::ios::app | std::ios::binary) << '\0'; }
};

std::string message_of_load(const fs::path& path, const PluginPins& pins, const std::string& name) {
  try {
    PluginLibrary::open(path, false, &pins, name);
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), ATTNRT_ERROR_UNSUPPORTED);
    return e.what();
  }
  return "";
}

// FIPS 180-2, appendix B.1: the independent reference for the digest itself.
TEST(Pins, Sha256OfAFileMatchesTheStandardsTestVector) {
  test::TempDir dir;
  EXPECT_EQ(sha256_of_file(dir.write("abc", "abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_of_file(dir.write("empty", "")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Pins, PinnedLibraryLoadsAndAChangedOneIsRefusedBeforeLoading) {
  PluginCopy copy;
  const std::string digest = sha256_of_file(copy.library);
  PluginPins pins;
  pins.add({"c_reference", digest, "c.yaml:3:5"});
  EXPECT_EQ(message_of_load(copy.library, pins, "c_reference"), "");
  EXPECT_EQ(message_of_load(copy.library, pins, ""), "") << "a loose library: its name is checked once loaded";

  copy.tamper();
  const std::string changed = sha256_of_file(copy.library);
  ASSERT_NE(changed, digest);
  const std::string m = message_of_load(copy.library, pins, "c_reference");
  EXPECT_TRUE(contains(m, copy.library.string() + ": refused: its sha256 is " + changed)) << m;
  EXPECT_TRUE(contains(m, "but 'c_reference' is pinned to " + digest + " (c.yaml:3:5)")) << m;
}

TEST(Pins, ALooseLibraryIsCheckedUnderTheNameItReports) {
  PluginCopy copy;
  PluginPins pins;
  pins.add({"c_reference", std::string(64, 'a'), "c.yaml:3:5"});
  const std::string m = message_of_load(copy.library, pins, "");
  EXPECT_TRUE(contains(m, "(plugin 'c_reference'): refused: its sha256 is ")) << m;
}

TEST(Pins, LockfileAdmitsOnlyLockedLibraries) {
  PluginCopy copy;
  PluginPins lock;
  lock.add({"eager", std::string(64, 'b'), "attnrt.lock:7:13"});
  lock.require_every_library("attnrt.lock");
  std::string m = message_of_load(copy.library, lock, "");
  EXPECT_TRUE(contains(m, "is not in the lockfile attnrt.lock; only locked plugins are loaded")) << m;
  m = message_of_load(copy.library, lock, "c_reference");
  EXPECT_TRUE(contains(m, "which has no pin for 'c_reference'")) << m;

  // The digest locked under another name: the file is known, but not as this plugin.
  PluginPins other;
  other.add({"eager", sha256_of_file(copy.library), "attnrt.lock:7:13"});
  other.require_every_library("attnrt.lock");
  m = message_of_load(copy.library, other, "");
  EXPECT_TRUE(contains(m, "is pinned for 'eager' (attnrt.lock:7:13), not for 'c_reference'")) << m;
}

TEST(Pins, RegistryListsARefusedLooseLibraryAsBrokenWithTheReason) {
  PluginCopy copy;
  PluginPins lock;
  lock.add({"eager", std::string(64, 'c'), "attnrt.lock:7:13"});
  lock.require_every_library("attnrt.lock");
  Registry registry({copy.dir.path()}, false, lock);
  EXPECT_EQ(registry.find("c_reference"), nullptr);
  ASSERT_EQ(registry.broken().size(), 1u);
  EXPECT_TRUE(contains(registry.broken()[0].reason, "not in the lockfile attnrt.lock")) << registry.broken()[0].reason;

  Registry unpinned({copy.dir.path()});
  EXPECT_NE(unpinned.find("c_reference"), nullptr);
}

TEST(Pins, LockfileRoundTripAndItsErrors) {
  test::TempDir dir;
  PluginCopy copy;
  const std::string digest = sha256_of_file(copy.library);
  const fs::path path = dir.path() / "attnrt.lock";
  write_lockfile(path, {{"c_reference", "1.0.0", digest, copy.library}}, "attnrt lock c.yaml");
  const PluginPins pins = read_lockfile(path);
  EXPECT_EQ(pins.lockfile(), path.string());
  EXPECT_EQ(message_of_load(copy.library, pins, "c_reference"), "");

  auto error_of = [&](const std::string& text) {
    try {
      read_lockfile(dir.write("bad.lock", text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(error_of("version: 1\nplugins:\n  - name: eager\n    sha256: 12ab\n"),
                       "bad.lock:4:13: the sha256 pin of 'eager' must be 64 lowercase hex digits"));
  EXPECT_TRUE(contains(error_of("version: 2\nplugins: []\n"), "lockfile version '2' is not 1"));
  EXPECT_TRUE(contains(error_of("plugins: 3\n"), "not an attnrt lockfile"));
  EXPECT_TRUE(contains(error_of("version: 1\nplugins:\n  - name: eager\n"), "bad.lock:3:5: a lockfile entry needs"));
}

Settings settings_of(const std::string& yaml, const std::string& name = "c.yaml") {
  return read_settings(Config::from_string(yaml, name), nullptr);
}

std::string settings_error(const std::string& yaml) {
  try {
    settings_of(yaml);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Pins, ConfigPinsAndLockfileSettings) {
  const std::string d1(64, 'd'), d2(64, 'e');
  Settings s =
      settings_of("attnrt:\n  plugin_sha256:\n    eager: [" + d1 + ", " + d2 + "]\n    sdpa: sha256:" + d1 + "\n");
  ASSERT_EQ(s.pins.pins_by_name().at("eager").size(), 2u);
  EXPECT_EQ(s.pins.pins_by_name().at("sdpa").front().sha256, d1) << "the 'sha256:' prefix is accepted";
  EXPECT_TRUE(contains(s.pins.pins_by_name().at("eager").front().origin, "c.yaml:3:"));
  EXPECT_TRUE(s.pins.lockfile().empty());

  EXPECT_TRUE(contains(settings_error("attnrt:\n  plugin_sha256:\n    eager: 1234\n"),
                       "c.yaml:3:5: the sha256 pin of 'eager' must be 64 lowercase hex digits"));
  EXPECT_TRUE(contains(settings_error("attnrt:\n  plugin_sha256: [1]\n"), "must map plugin names to sha256 digests"));
  EXPECT_TRUE(contains(settings_error("attnrt:\n  lockfile: /nonexistent/attnrt.lock\n"),
                       "c.yaml:2:3: lockfile /nonexistent/attnrt.lock does not exist (write it with 'attnrt lock')"));

  test::TempDir dir;
  write_lockfile(dir.path() / "attnrt.lock", {{"eager", "1", d1, "/x"}}, "test");
  const fs::path config =
      dir.write("c.yaml", "attnrt:\n  lockfile: attnrt.lock\n  plugin_sha256: {sdpa: " + d2 + "}\n");
  s = read_settings(Config::from_file(config), nullptr);
  EXPECT_EQ(s.lockfile, dir.path() / "attnrt.lock") << "relative to the config file";
  EXPECT_EQ(s.pins.lockfile(), (dir.path() / "attnrt.lock").string());
  EXPECT_EQ(s.pins.pins_by_name().size(), 2u) << "the config's own pins stay beside the lockfile's";
}

}  // namespace
}  // namespace attnrt
