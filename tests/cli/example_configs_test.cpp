// The example configs resolve to the plugin they name from any working directory: a relative
// plugin path in a config is relative to the config file's folder (like plugin_dirs and
// workload.file), while one given as a command-line override is relative to the working
// directory (issue 22).
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/sites.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace attnrt {
namespace {

namespace fs = std::filesystem;
using test::run_cli;

nlohmann::json resolve_json(const std::string& args, const fs::path& cwd, int* exit_code = nullptr) {
  const auto r = run_cli("resolve " + args + " --json", "", cwd);
  if (exit_code) *exit_code = r.exit_code;
  const size_t at = r.output.find("[\n");
  if (at == std::string::npos) return nlohmann::json{{"output", r.output}};
  return nlohmann::json::parse(r.output.substr(at, r.output.rfind("]") - at + 1));
}

// The build folder this test belongs to: <build>/lib/attnrt/plugins is test::plugins_dir().
fs::path build_dir() { return test::plugins_dir().parent_path().parent_path().parent_path(); }

TEST(ExampleConfigs, ResolveTheSameFromTheRepositoryRootAndFromAnotherDirectory) {
  std::vector<fs::path> examples;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "configs/examples")) {
    if (e.path().extension() == ".yaml") examples.push_back(e.path());
  }
  std::sort(examples.begin(), examples.end());
  ASSERT_FALSE(examples.empty());
  test::TempDir elsewhere;
  for (const fs::path& config : examples) {
    SCOPED_TRACE(config.filename().string());
    // As the README runs them (a path relative to the root), and by absolute path from elsewhere.
    int rc_root = -1, rc_elsewhere = -1;
    auto from_root = resolve_json("configs/examples/" + config.filename().string(), test::source_dir(), &rc_root);
    auto from_elsewhere = resolve_json("'" + config.string() + "'", elsewhere.path(), &rc_elsewhere);
    ASSERT_TRUE(from_root.is_array()) << from_root.dump(2);
    for (auto* j : {&from_root, &from_elsewhere}) {
      for (auto& site : *j) site.erase("from");  // the config's path as given
    }
    EXPECT_EQ(from_root, from_elsewhere);
    EXPECT_EQ(rc_root, rc_elsewhere);
    for (const auto& site : from_root) {
      const std::string requested = site["requested"];
      EXPECT_FALSE(requested.rfind("./", 0) == 0 || requested.rfind("../", 0) == 0)
          << "a path from a config file stays relative to the working directory: " << requested;
    }
  }
}

TEST(ExampleConfigs, SinkPluginPathNamesTheBuildTreesSdpaBesideTheConfig) {
  // In the repository: ../../build/lib/attnrt/plugins/sdpa beside configs/examples/, wherever
  // the command runs (the default build folder may not exist here: CI builds elsewhere).
  const fs::path config = test::source_dir() / "configs/examples/sink_plugin_path.yaml";
  const std::string expected = (test::source_dir() / "build/lib/attnrt/plugins/sdpa").lexically_normal().string();
  test::TempDir elsewhere;
  for (const fs::path& cwd : {test::source_dir(), elsewhere.path()}) {
    const auto j = resolve_json("'" + config.string() + "'", cwd);
    ASSERT_EQ(j.size(), 1u) << j.dump(2);
    EXPECT_EQ(j[0]["requested"], expected) << "from " << cwd;
  }

  // A copy of the repository's layout whose build/ is this build: the example, unchanged, loads
  // the plugin it names, run from the layout's root (by a relative config path, as the README
  // does) and from another directory.
  test::TempDir repo;
  fs::create_directories(repo.path() / "configs/examples");
  fs::copy_file(config, repo.path() / "configs/examples/sink_plugin_path.yaml");
  fs::create_directory_symlink(build_dir(), repo.path() / "build");
  const std::string sdpa = (repo.path() / "build/lib/attnrt/plugins/sdpa").string();
  for (const auto& [cwd, path] :
       {std::pair{repo.path(), std::string("configs/examples/sink_plugin_path.yaml")},
        std::pair{elsewhere.path(), (repo.path() / "configs/examples/sink_plugin_path.yaml").string()}}) {
    SCOPED_TRACE("from " + cwd.string());
    const auto j = resolve_json(path, cwd);
    ASSERT_EQ(j.size(), 1u) << j.dump(2);
    EXPECT_EQ(j[0]["requested"], sdpa);
    EXPECT_EQ(j[0]["chosen"], "sdpa");
    EXPECT_EQ(j[0]["fell_back"], false) << "the path itself must load: " << j.dump(2);
    ASSERT_EQ(j[0]["attempts"].size(), 1u) << j.dump(2);
    EXPECT_EQ(j[0]["attempts"][0]["candidate"], sdpa);
  }
}

TEST(ExampleConfigs, OverridePathsAreRelativeToTheWorkingDirectory) {
  // The same relative value: from an override, the working directory's; from a config file, the
  // file's folder's.
  const fs::path fixtures = test::fixtures();
  const std::string config = (test::source_dir() / "configs/examples/verl_ppo_eager.yaml").string();
  auto j = resolve_json(
      "'" + config + "' actor_rollout_ref.model.override_config.attn_implementation=./plugins/c_reference", fixtures);
  ASSERT_EQ(j.size(), 2u) << j.dump(2);
  EXPECT_EQ(j[0]["requested"], "./plugins/c_reference");
  EXPECT_EQ(j[0]["chosen"], "c_reference");
  EXPECT_EQ(j[0]["fell_back"], false) << j.dump(2);

  test::TempDir dir;
  const fs::path file = dir.write("nested/uses_c_reference.yaml", "attn_implementation: ../plugins/c_reference\n");
  fs::create_directory_symlink(fixtures / "plugins", dir.path() / "plugins");
  test::TempDir elsewhere;
  j = resolve_json("'" + file.string() + "'", elsewhere.path());
  ASSERT_EQ(j.size(), 1u) << j.dump(2);
  EXPECT_EQ(j[0]["requested"], (dir.path() / "plugins/c_reference").string());
  EXPECT_EQ(j[0]["chosen"], "c_reference");
  EXPECT_EQ(j[0]["fell_back"], false) << j.dump(2);
}

TEST(Sites, RelativePathValuesAnchorAtTheirConfigFile) {
  Config c = Config::from_string(
      "a:\n  override_config:\n    attn_implementation: ./my_plugin\n"
      "b:\n  override_config:\n    attn_implementation: libx.so\n"
      "c:\n  override_config:\n    attn_implementation: /opt/k/p\n"
      "d:\n  override_config:\n    attn_implementation: org/name\n",
      "/srv/configs/run.yaml");
  c.apply_override("++e.override_config.attn_implementation=../mine");
  const SiteScan scan = find_sites(c, Deprecations{}, "sdpa");
  ASSERT_EQ(scan.sites.size(), 5u);
  EXPECT_EQ(scan.sites[0].value, "/srv/configs/my_plugin");
  EXPECT_EQ(scan.sites[1].value, "/srv/configs/libx.so");
  EXPECT_EQ(scan.sites[2].value, "/opt/k/p");
  EXPECT_EQ(scan.sites[3].value, "org/name") << "a hub name is no path";
  EXPECT_EQ(scan.sites[4].value, "../mine") << "an override's path is the working directory's";
}

}  // namespace
}  // namespace attnrt
