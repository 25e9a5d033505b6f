// The issue 19 reports, end to end through the attnrt command: a truncated plugin named by path
// (it killed `attnrt resolve` with SIGBUS) or dropped in a search folder (silently left out), a
// world-writable plugin folder whose eager shadowed the built-in one, and a huge value echoed
// whole in messages.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <fstream>

#include "test_support.hpp"

namespace attnrt {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using test::TempDir;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The built-in sdpa library cut to its first 20,000 bytes, at `to`.
fs::path truncated_sdpa(const fs::path& to) {
  std::ifstream in(test::plugins_dir() / "sdpa/libattnrt_sdpa.so", std::ios::binary);
  std::string bytes(20000, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  fs::create_directories(to.parent_path());
  std::ofstream(to, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return to;
}

TEST(PluginSafetyCli, TruncatedPluginByPathIsRefusedNotACrash) {
  TempDir dir;
  const fs::path so = truncated_sdpa(dir.path() / "libattnrt_sdpa.so");
  const auto r = run_cli("resolve configs/examples/strict_flash.yaml attn_implementation=" + so.string());
  EXPECT_NE(r.exit_code, 135) << "SIGBUS: " << r.output;
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, so.string() + ": not a loadable shared library (program header")) << r.output;
  EXPECT_TRUE(contains(r.output, "ends past the end of the file (20000 bytes): truncated?")) << r.output;
}

TEST(PluginSafetyCli, TruncatedPluginInASearchFolderIsListedAsBroken) {
  TempDir dir;
  const fs::path so = truncated_sdpa(dir.path() / "plugins/libattnrt_sdpa.so");
  const auto r = run_cli("list", "ATTNRT_PLUGIN_PATH=" + (dir.path() / "plugins").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "no - broken: " + so.string() + ": not a loadable shared library (")) << r.output;
  const auto j = run_cli("list --json", "ATTNRT_PLUGIN_PATH=" + (dir.path() / "plugins").string());
  EXPECT_TRUE(contains(j.output, "\"broken\": [")) << j.output;
}

TEST(PluginSafetyCli, WorldWritableFolderIsRefusedAndItsEagerShadowsNothing) {
  TempDir dir;
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  fs::copy(test::plugins_dir() / "eager", shared / "eager", fs::copy_options::recursive);
  fs::permissions(shared, fs::perms::all);  // chmod 777
  const std::string env = "ATTNRT_PLUGIN_PATH=" + shared.string();
  auto r = run_cli("resolve configs/examples/strict_flash.yaml attn_implementation=eager --json", env);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "search folder " + shared.string() +
                                     " refused: folder writable by every user (mode 0777); nothing in it is loaded"))
      << r.output;
  EXPECT_FALSE(contains(r.output, (shared / "eager").string() + "/libattnrt_eager.so")) << r.output;
  r = run_cli("list", env);
  EXPECT_TRUE(contains(r.output, "not searched: search folder " + shared.string() + " refused")) << r.output;
  // On purpose: the config key, or the environment variable.
  r = run_cli("list attnrt.allow_writable_plugins=true", env);
  EXPECT_TRUE(contains(r.output, (shared / "eager/libattnrt_eager.so").string())) << r.output;
  r = run_cli("list", env + " ATTNRT_ALLOW_WRITABLE_PLUGINS=1");
  EXPECT_TRUE(contains(r.output, (shared / "eager/libattnrt_eager.so").string())) << r.output;
}

// attnrt lock pins what the config resolves to; a pinned plugin whose file then changes (here one
// byte appended to a copy of eager that shadows the built-in one) is refused before it is loaded,
// with both digests, and the site falls back (or fails under strict).
TEST(PluginSafetyCli, LockedPluginThatChangesIsRefusedWithBothDigests) {
  TempDir dir;
  const fs::path plugins = dir.path() / "plugins";
  fs::create_directories(plugins);
  fs::copy(test::plugins_dir() / "eager", plugins / "eager", fs::copy_options::recursive);
  const fs::path lock = dir.path() / "attnrt.lock";
  const std::string config = "configs/examples/verl_ppo_eager.yaml attnrt.plugin_dirs=[" + plugins.string() + "]";
  auto r = run_cli("lock " + config + " -o " + lock.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + lock.string())) << r.output;
  const std::string text = test::read_file(lock);
  EXPECT_TRUE(contains(text, (plugins / "eager/libattnrt_eager.so").string())) << text;
  EXPECT_TRUE(contains(text, "name: sdpa")) << "the fallback chain is locked too: " << text;

  const std::string locked = config + " +attnrt.lockfile=" + lock.string() + " --json";
  r = run_cli("resolve " + locked);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"chosen\": \"eager\"")) << r.output;
  EXPECT_FALSE(contains(r.output, "refused")) << r.output;

  std::ofstream(plugins / "eager/libattnrt_eager.so", std::ios::app | std::ios::binary) << '\0';
  r = run_cli("resolve " + locked);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, (plugins / "eager/libattnrt_eager.so").string() + ": refused: its sha256 is "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "but 'eager' is pinned to ")) << r.output;
  EXPECT_TRUE(contains(r.output, "\"chosen\": \"sdpa\"")) << "falls back: " << r.output;
  r = run_cli("resolve " + locked + " attnrt.strict=true");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "strict mode: 'eager' cannot be used")) << r.output;
}

TEST(PluginSafetyCli, LongValueIsShortenedInMessages) {
  const std::string value(3000, 'x');
  const auto r = run_cli("resolve configs/examples/strict_flash.yaml attn_implementation=" + value);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "... (3000 bytes)")) << r.output.substr(0, 2000);
  EXPECT_FALSE(contains(r.output, value)) << "echoed whole";
}

TEST(PluginSafetyCli, DuplicateKeyInAConfigIsAnError) {
  TempDir dir;
  const auto file = dir.write("dup.yaml", "attn_implementation: eager\nattn_implementation: sdpa\n");
  const auto r = run_cli("resolve " + file.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(
      r.output, file.string() + ":2:1: duplicate key 'attn_implementation' (first at " + file.string() + ":1:1)"))
      << r.output;
}

}  // namespace
}  // namespace attnrt
