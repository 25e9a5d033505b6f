// attnrt list [--matrix] [--json]: the plugins found, what they declare, and whether each is
// usable on this machine (and why not); --matrix adds the implementation x device table
// computed from the plugins' own capabilities and the configured fallback chains.
#include "commands.hpp"
#include "options.hpp"
#include "table.hpp"

#include <attnrt/runtime/device.hpp>
#include <attnrt/runtime/error.hpp>
#include <attnrt/runtime/runtime.hpp>
#include <attnrt/validate.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>

namespace attnrt::cli {
namespace {

// A small call every attention backend should accept, to ask "usable here at all?".
attnrt_attention_desc probe_desc(const attnrt_capabilities& caps, const DeviceInfo& device) {
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = (caps.dtypes & ATTNRT_DTYPE_BIT_BF16) && device.dl.device_type == kDLCUDA ? ATTNRT_DTYPE_BF16
            : (caps.dtypes & ATTNRT_DTYPE_BIT_FP32)                                   ? ATTNRT_DTYPE_FP32
            : (caps.dtypes & ATTNRT_DTYPE_BIT_FP16)                                   ? ATTNRT_DTYPE_FP16
                                                                                      : ATTNRT_DTYPE_BF16;
  d.head_dim = d.head_dim_v =
      std::clamp(64, std::max(1, caps.min_head_dim), caps.max_head_dim > 0 ? caps.max_head_dim : 64);
  d.heads_q = d.heads_kv = 1;
  d.batch = 1;
  d.seqlen_q = d.seqlen_k = 128;
  d.softmax_scale = 0.125f;
  d.window_left = d.window_right = -1;
  d.device = device.dl;
  d.cuda_arch = device.cuda_arch;
  return d;
}

// Capability-only check of a device class ("cpu" or a CUDA arch), for the matrix's columns.
std::string caps_gap(const attnrt_capabilities& caps, bool cuda, int32_t arch) {
  DeviceInfo dev;
  dev.dl = cuda ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
  dev.cuda_arch = arch;
  return sdk::capability_gap(caps, probe_desc(caps, dev));
}

struct Column {
  std::string label;
  bool cuda;
  int32_t arch;
  const DeviceInfo* here;  // this machine's device of this kind, if any
};

}  // namespace

int list_command(const CommonArgs& args) {
  Runtime rt(runtime_options(args));
  use_config_log_level(rt);
  Registry& reg = rt.registry();
  const DeviceInventory& inv = probe_devices();
  std::vector<const DeviceInfo*> devices = {&inv.cpu};
  for (const auto& d : inv.cuda) devices.push_back(&d);

  nlohmann::json j;
  j["search_dirs"] = nlohmann::json::array();
  for (const auto& d : reg.search_dirs()) j["search_dirs"].push_back(d.string());
  j["devices"] = {{"cpu", inv.cpu.name}, {"cuda", inv.cuda_status}};
  j["plugins"] = nlohmann::json::array();
  Table table({"NAME", "VERSION", "ABI", "DEVICES", "DTYPES", "FEATURES", "USABLE HERE", "LIBRARY"});

  for (const PluginRecord& rec : reg.plugins()) {
    nlohmann::json p{{"name", rec.name}, {"library", rec.library.string()}, {"aliases", rec.aliases}};
    try {
      auto lib = reg.load(rec);
      const attnrt_capabilities& caps = lib->capabilities();
      std::vector<std::string> usable, why_not;
      Backend backend(lib);
      for (const DeviceInfo* dev : devices) {
        const std::string reason = backend.unsupported_reason(probe_desc(caps, *dev));
        if (reason.empty())
          usable.push_back(dev->label());
        else
          why_not.push_back(dev->label() + ": " + reason);
      }
      if (!(caps.devices & ATTNRT_DEVICE_BIT_CPU) && inv.cuda.empty()) why_not.push_back("cuda: " + inv.cuda_status);
      std::string here = usable.empty() ? "no" : "yes (" + fmt::format("{}", fmt::join(usable, ", ")) + ")";
      if (usable.empty() && !why_not.empty()) here += " - " + fmt::format("{}", fmt::join(why_not, "; "));
      table.add({rec.name, lib->version(), lib->abi_version(), describe_devices(caps), describe_dtypes(caps.dtypes),
                 describe_features(caps.features), here, rec.library.string()});
      p.update({{"version", lib->version()},
                {"abi", lib->abi_version()},
                {"devices", describe_devices(caps)},
                {"dtypes", describe_dtypes(caps.dtypes)},
                {"features", describe_features(caps.features)},
                {"usable_on", usable},
                {"not_usable", why_not},
                {"description", lib->api().description ? lib->api().description : ""}});
    } catch (const Error& e) {
      table.add({rec.name, "?", "?", "?", "?", "?", std::string("no - ") + e.what(), rec.library.string()});
      p["error"] = e.what();
    }
    j["plugins"].push_back(p);
  }
  // Found but unusable (corrupt, not a plugin, refused for its permissions): listed, with why.
  j["broken"] = nlohmann::json::array();
  for (const BrokenPlugin& b : reg.broken()) {
    table.add({b.path.filename().string(), "?", "?", "?", "?", "?", "no - broken: " + b.reason, b.path.string()});
    j["broken"].push_back({{"path", b.path.string()}, {"reason", b.reason}, {"found_in", b.found_in}});
  }
  for (const std::string& problem : reg.scan_problems()) j["scan_problems"].push_back(problem);

  // The device matrix, from capabilities and the configured chains.
  std::vector<Column> columns = {
      {"cpu", false, 0, &inv.cpu}, {"cuda sm80", true, 80, nullptr}, {"cuda sm90", true, 90, nullptr}};
  for (const auto& d : inv.cuda) {
    bool found = false;
    for (Column& c : columns) {
      if (c.cuda && c.arch == d.cuda_arch) {
        c.here = &d;
        found = true;
      }
    }
    if (!found) columns.push_back({fmt::format("cuda sm{}", d.cuda_arch), true, d.cuda_arch, &d});
  }
  std::vector<std::string> names;
  std::set<std::string> seen;
  auto add_name = [&](const std::string& n) {
    if (seen.insert(n).second) names.push_back(n);
  };
  for (const char* n : {"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention", "paged_attention"})
    add_name(n);
  for (const auto& rec : reg.plugins()) add_name(rec.name);
  for (const auto& [dev, chain] : rt.settings().fallback)
    for (const auto& n : chain) add_name(n);

  auto usable_on = [&](const std::string& name, const Column& col, std::string* why) -> bool {
    const PluginRecord* rec = reg.find(name, col.cuda ? "cuda" : "cpu");
    if (!rec) {
      *why = "not installed";
      return false;
    }
    try {
      auto lib = reg.load(*rec);
      *why = caps_gap(lib->capabilities(), col.cuda, col.arch);
      if (why->empty() && col.here) *why = Backend(lib).unsupported_reason(probe_desc(lib->capabilities(), *col.here));
      return why->empty();
    } catch (const Error& e) {
      *why = e.what();
      return false;
    }
  };
  std::vector<std::string> header = {"IMPLEMENTATION"};
  for (const Column& c : columns) header.push_back(c.label + (c.here ? " (here)" : ""));
  Table matrix(header);
  j["matrix"] = nlohmann::json::object();
  for (const std::string& name : names) {
    std::vector<std::string> row = {name};
    for (const Column& col : columns) {
      std::string why;
      std::string cell;
      if (usable_on(name, col, &why)) {
        cell = "usable";
      } else {
        DeviceInfo dev;
        dev.dl = col.cuda ? DLDevice{kDLCUDA, 0} : DLDevice{kDLCPU, 0};
        dev.cuda_arch = col.arch;
        std::string target;
        for (const std::string& c : rt.settings().fallback_chain(dev)) {
          std::string ignored;
          if (c != name && usable_on(c, col, &ignored)) {
            target = c;
            break;
          }
        }
        cell = (target.empty() ? "no fallback" : "-> " + target) + " (" + why + ")";
      }
      j["matrix"][name][col.label] = cell;
      row.push_back(cell);
    }
    matrix.add(row);
  }

  if (args.json) {
    std::puts(j.dump(2).c_str());
    return 0;
  }
  std::vector<std::string> dirs;
  for (const auto& d : reg.search_dirs()) dirs.push_back(d.string());
  fmt::print("Plugin search path: {}\n", fmt::join(dirs, ", "));
  fmt::print("Devices: {}; CUDA: {}\n\n", inv.cpu.name, inv.cuda_status);
  table.print();
  for (const std::string& problem : reg.scan_problems()) fmt::print("not searched: {}\n", problem);
  if (args.matrix) {
    fmt::print("\nDevice matrix (from the plugins found; '-> X' is where a request falls back):\n");
    matrix.print();
  }
  return 0;
}

}  // namespace attnrt::cli
