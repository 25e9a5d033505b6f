// What fuzzing found (issue 19; fuzz/, tools/fuzz.sh, docs/reliability.md's "Fuzzing"), and what
// reading the parsers while writing the fuzz targets found (said so at each test): each input
// that crashed a target, hung it, or made the runtime throw something other than attnrt::Error,
// kept as a test that expects the clear error (or the right answer) instead.
#include <attnrt/harness/safetensors.hpp>
#include <attnrt/runtime/config.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/resolver.hpp>
#include <attnrt/runtime/rules.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/runtime/sites.hpp>
#include <attnrt/runtime/yaml_input.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>

#include "test_support.hpp"

namespace attnrt {
namespace {

// The message of the attnrt::Error `f` throws; "" when it throws none. Another exception type
// fails the test (it escapes).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// config target: a rule file (attnrt.rules_files) that is a scalar or a list made yaml-cpp's
// operator[] throw YAML::BadSubscript past parse_rules.
TEST(FuzzFindings, RuleFileThatIsNotAMappingIsAnError) {
  for (const char* text : {"0", "rules", "[a, b]", "- id: x\n  message: m\n"}) {
    EXPECT_NE(error_of([&] {
                parse_rules(load_yaml(text, "r.yaml"), "r.yaml");
              }).find("r.yaml:1:1: a rule file must be a mapping with a 'rules' list"),
              std::string::npos)
        << text;
  }
  EXPECT_TRUE(parse_rules(load_yaml("# nothing\n", "r.yaml"), "r.yaml").empty());
}

// config target: a key that is a mapping or a list (`? [a, b]`, `{[a]: 1}`) made
// Config::from_string throw yaml-cpp's TypedBadConversion (Config::record_origins reads every key
// as a string, as every other reader of attnrt's files does). Now the reader refuses it with the
// position, alias keys too.
TEST(FuzzFindings, KeysMustBePlainValues) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"? [a, b]\n: 1\n", "c.yaml:1:3: a key must be a plain value"},
      {"attnrt: {[a]: 1}\n", "c.yaml:1:10: a key must be a plain value"},
      {"m:\n  ? {x: 1}\n  : 2\n", "c.yaml:2:5: a key must be a plain value"},
      {"a: &k name\n*k : 2\n", "c.yaml:2:1: a key must be a plain value"},
  };
  for (const auto& [text, expected] : cases) {
    EXPECT_NE(error_of([&] { Config::from_string(text, "c.yaml"); }).find(expected), std::string::npos)
        << text << " -> " << error_of([&] { Config::from_string(text, "c.yaml"); });
  }
  EXPECT_EQ(error_of([&] { Config::from_string("~: 1\n3: x\n", "c.yaml"); }), "") << "null and number keys are plain";
}

// Not found by the fuzzer (its runs never wrote an alias inside its anchor's node: yaml-cpp is not
// instrumented, so anchors give it no coverage to follow; fuzz/corpus/config/ now holds two) but
// by reading the reader while writing the config target: an alias inside the node its anchor names made yaml-cpp build
// a cyclic tree, and Config::record_origins followed it until the stack overflowed (SIGSEGV).
TEST(FuzzFindings, AliasCyclesAreRefused) {
  for (const char* text : {"a: &x\n  b: *x\n", "a: &x [1, *x]\n", "&r {m: {n: *r}}\n"}) {
    EXPECT_NE(error_of([&] { Config::from_string(text, "c.yaml"); }).find("an alias inside the node its anchor names"),
              std::string::npos)
        << text;
  }
  EXPECT_EQ(error_of([&] { Config::from_string("a: &x {b: 1}\nc: *x\nd: [*x, *x]\n", "c.yaml"); }), "");
}

// Found by reading, like the cycle above: nested aliases within the limits (here 354,000 nodes
// expanded, under 10^6, from an 80 KB file with keys of 1,000 bytes) made `attnrt resolve` run
// for over 5 minutes (stopped there) at 1.4 GB: every expanded copy got its origin recorded under
// a path of up to 4 KB, and every key was compared letter by letter with each known key (the
// site scan's "did you mean"). Now each mapping of the file is walked once for origins, and the
// comparison skips keys whose length alone rules them out: 0.4 s in a Debug build.
TEST(FuzzFindings, NestedAliasesWithLongKeysStayCheap) {
  std::string text;
  for (int level = 0; level < 4; ++level) {
    text += "l" + std::to_string(level) + ": &a" + std::to_string(level) + "\n";
    if (level == 0) text += "  override_config: {attn_implementation: eager}\n";
    for (int i = 0; i < 20; ++i) {
      std::string key = "k" + std::to_string(level) + "_" + std::to_string(i) + "_";
      key.resize(1000, 'x');
      text += "  " + key + ": " + (level == 0 ? std::string("1") : "*a" + std::to_string(level - 1)) + "\n";
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const Config config = Config::from_string(text, "c.yaml");
  const Deprecations d =
      Deprecations::from_yaml(YAML::Load(std::string(embedded_config("deprecations.yaml"))), "d.yaml");
  const SiteScan scan = find_sites(config, d, "auto");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 60.0) << "was over 300 s";
  EXPECT_EQ(scan.sites.size(), 1u + 20 + 400 + 8000);  // every copy of l0 is a site of its own
  // A key under an alias takes the position of the alias's key: l1's first key, line 24.
  const std::string k1 = "k1_0_" + std::string(995, 'x');
  EXPECT_EQ(config.origin("l1." + k1 + ".override_config").describe(), "c.yaml:24:3");
}

// value_form target: a value with a '/' was a hub name whatever its parts, so 'acme/../../x'
// was looked up as <plugin dir>/acme/../../x, a folder outside every plugin folder, and loaded.
TEST(FuzzFindings, HubNameStaysInsideThePluginFolder) {
  for (const char* value : {"acme/../../outside/c_reference", "acme/..", "../x/..", "a/b/c", "acme/", "acme/.",
                            "acme/c_reference@", "./"}) {
    const ParsedValue v = classify_value(value);
    if (v.form == ValueForm::kPath) continue;  // ../x/.. and ./ are paths, by the rule
    EXPECT_EQ(v.form, ValueForm::kInvalid) << value;
    EXPECT_NE(v.problem.find("neither a path"), std::string::npos) << value;
  }
  EXPECT_EQ(classify_value(std::string("eager\0.so", 9)).form, ValueForm::kInvalid);
  const ParsedValue hub = classify_value("acme/c_reference@0.1.0");
  EXPECT_EQ(hub.form, ValueForm::kHub);
  EXPECT_EQ(hub.org + "|" + hub.name + "|" + hub.version, "acme|c_reference|0.1.0");

  // A real plugin folder beside the search folder, reached through acme/../..: refused.
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "plugins" / "acme");
  std::filesystem::create_directories(dir.path() / "outside");
  std::filesystem::copy(test::fixtures() / "plugins" / "c_reference", dir.path() / "outside" / "c_reference",
                        std::filesystem::copy_options::recursive);
  Registry registry({dir.path() / "plugins"});
  Settings settings;
  settings.strict = true;
  Resolver resolver(registry, settings, Deprecations{}, {}, probe_devices().cpu);
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = ATTNRT_DTYPE_FP32;
  d.head_dim = d.head_dim_v = 64;
  d.heads_q = d.heads_kv = 4;
  d.batch = 1;
  d.seqlen_q = d.seqlen_k = 16;
  d.softmax_scale = 0.125f;
  d.window_left = d.window_right = -1;
  const Resolution r = resolver.resolve("site", "acme/../../outside/c_reference", d);
  EXPECT_FALSE(r.ok()) << "loaded " << r.chosen << " from outside the plugin folder";
  ASSERT_FALSE(r.attempts.empty());
  EXPECT_NE(r.attempts[0].reason.find("nor a hub name org/name[@version]"), std::string::npos) << r.attempts[0].reason;
}

// A safetensors file: the 8-byte length, the JSON header, then `data`.
std::string safetensors(const std::string& header, const std::string& data = std::string(16, '\0')) {
  std::string bytes(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes + header + data;
}

std::string header_error(const std::string& file) {
  std::istringstream in(file);
  return error_of([&] { read_safetensors_header(in, file.size(), "x.safetensors"); });
}

// safetensors target: the fuzzer's input, a shape extent past uint64 (a JSON float to
// nlohmann-json), was converted to int64 with undefined behaviour (UBSan: "2.92234e+19 is outside
// the range of representable values of type 'long'"). Its neighbours, found by reading the same
// code: a negative float offset (the same conversion to uint64), extents whose product overflows
// int64 (signed overflow, and a tensor load_safetensors would allocate 0 bytes for and then index
// as 2^62 elements), and an int64 element narrowed to int32 out of range.
TEST(FuzzFindings, SafetensorsHeaderNumbersAreChecked) {
  const std::string fuzzer = R"({"q":{"dtype":"F16","shape":[2,29223372036854775807,16],"data_offsets":[0,16]}})";
  EXPECT_NE(header_error(safetensors(fuzzer)).find("x.safetensors: tensor 'q': 'shape' holds 2.922"), std::string::npos)
      << header_error(safetensors(fuzzer));
  EXPECT_NE(header_error(safetensors(R"({"q":{"dtype":"F32","shape":[1],"data_offsets":[-1.5,4]}})"))
                .find("'data_offsets' holds -1.5; expected integers from 0 to 16"),
            std::string::npos);
  EXPECT_NE(header_error(safetensors(R"({"q":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})"))
                .find("has more elements than an int64 counts"),
            std::string::npos);
  EXPECT_NE(header_error(safetensors(R"({"q":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})"))
                .find("data_offsets hold 0 bytes; its shape and dtype need more than the file holds"),
            std::string::npos);
  EXPECT_NE(header_error(safetensors(R"({"q":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})"))
                .find("expected integers from 0 to 16"),
            std::string::npos);
  EXPECT_NE(header_error(safetensors("[1, 2]")).find("the header must be a JSON object, not array"), std::string::npos);
  EXPECT_NE(header_error(safetensors(R"({"__metadata__":{"a":)" + std::string(100, '[') + std::string(100, ']') + "}}"))
                .find("nested deeper than 64 levels"),
            std::string::npos);
  // Still read: an empty tensor whose other extents are large, a scalar.
  std::istringstream in(safetensors(
      R"({"e":{"dtype":"F32","shape":[0,4611686018427387904],"data_offsets":[0,0]},"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})"));
  EXPECT_EQ(read_safetensors_header(in, in.str().size(), "x").tensors.size(), 2u);

  test::TempDir dir;
  int64_t big = int64_t{1} << 40;
  std::string data(8, '\0');
  std::memcpy(data.data(), &big, 8);
  const auto file =
      dir.write("i64.safetensors", safetensors(R"({"m":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", data));
  EXPECT_NE(error_of([&] { load_safetensors(file); }).find("element 0 (1099511627776) does not fit the int32"),
            std::string::npos);
}

}  // namespace
}  // namespace attnrt
