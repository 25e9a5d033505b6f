// extensions: what a plugin does with extension blocks (ABI 1.1) it does not know. A required
// block must be refused by supports() (UNSUPPORTED, with a reason naming its type) and by
// forward, never ignored; an optional one is a hint that does not change the result, so the call
// must be accepted and its output be bit-identical to the call without it. Straight through the
// C table, like support-query: the host's gate cannot hide what the plugin itself does.
#include "extension_check.hpp"

#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstring>
#include <vector>

namespace attnrt::check {
namespace {

// A vendor type no plugin implements: attnrt check keeps the last one for this probe.
constexpr uint32_t kProbeType = 0xFFFFFFFFu;

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.nbytes() == b.nbytes() && (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

bool names_probe_type(const std::string& reason) {
  std::string lower = reason;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("0xffffffff") != std::string::npos || lower.find("4294967295") != std::string::npos;
}

}  // namespace

std::string check_unknown_extensions(const std::filesystem::path& lib) {
  RawPlugin raw(lib);
  if (raw.api().abi_minor < 1) {
    throw CheckSkipped(
        fmt::format("built against ABI {}.{}: extension blocks (ABI 1.1) are never sent to it; the "
                    "host refuses it for calls that carry one",
                    raw.api().abi_major, raw.api().abi_minor));
  }
  const attnrt_capabilities& caps = raw.lib->capabilities();
  Workload w = cpu_workload(base_spec(caps, first_dtype(caps)), caps);
  w.desc.struct_size = sizeof w.desc;
  w.desc.extensions = nullptr;
  if (const std::string why = raw.unsupported(w.desc); !why.empty()) {
    throw CheckSkipped("the plugin refuses the base call: " + why);
  }
  const attnrt_forward_args fa = w.forward_args();
  std::vector<char> ws;
  auto run_forward = [&](sdk::MessageBuffer& err) {
    w.out.fill_nan();
    if (!w.lse.empty()) w.lse.fill_nan();
    return raw.forward(w.desc, fa, ws, err);
  };
  sdk::MessageBuffer base_err;
  report_case("the call without a block: forward");
  if (run_forward(base_err) != ATTNRT_OK) throw CheckFailed(std::string("the base call failed: ") + base_err.text());
  const HostTensor plain_out = w.out;
  const HostTensor plain_lse = w.lse;

  std::vector<std::string> failures;
  attnrt_extension block{sizeof(attnrt_extension), kProbeType, 0, nullptr};
  w.desc.extensions = &block;

  // Required: refused by supports() with a reason that names the type, and by forward.
  report_case("a required unknown block: support query, then forward");
  sdk::MessageBuffer reason;
  const attnrt_status required = raw.api().supports(raw.inst, &w.desc, reason.get());
  std::string refusal = reason.text();
  if (required == ATTNRT_OK) {
    failures.push_back(
        "supports() accepted a required block of unknown vendor type 0xffffffff: a plugin must refuse "
        "a required extension it does not implement");
  } else {
    if (required != ATTNRT_ERROR_UNSUPPORTED) {
      failures.push_back(
          fmt::format("supports() refused the required unknown block as {}, not unsupported", status_name(required)));
    }
    if (!names_probe_type(refusal)) {
      failures.push_back(
          fmt::format("the reason for refusing the required block does not name its type 0xffffffff: '{}'", refusal));
    }
    sdk::MessageBuffer err;
    if (run_forward(err) == ATTNRT_OK) failures.push_back("forward computed a call with a required unknown block");
  }

  // Optional: accepted, and the same bits as without it.
  block.flags = ATTNRT_EXTENSION_OPTIONAL;
  report_case("an optional unknown block: support query, then forward");
  if (const std::string why = raw.unsupported(w.desc); !why.empty()) {
    failures.push_back("supports() refused an optional block of unknown type (a hint it may ignore): " + why);
  } else {
    sdk::MessageBuffer err;
    if (run_forward(err) != ATTNRT_OK) {
      failures.push_back(std::string("forward failed with an optional unknown block: ") + err.text());
    } else if (!same_bytes(w.out, plain_out) || !same_bytes(w.lse, plain_lse)) {
      failures.push_back("with an optional unknown block the output differs from the call without it");
    }
  }
  w.desc.extensions = nullptr;
  if (!failures.empty()) throw CheckFailed(fmt::format("{}", fmt::join(failures, "; ")));
  return fmt::format("a required unknown block is refused ('{}'); an optional one is ignored, output bit-identical",
                     refusal);
}

}  // namespace attnrt::check
