// attnrt_plugin_manifest: writes a plugin's manifest (plugin.yaml) from the library's own
// metadata, so that a plugin's name, version, description and devices are written once, in
// its code (attnrt_plugin_api), and the manifest can never disagree with the library it names.
// attnrt_add_plugin() runs it after every link (cmake/AttnrtPlugin.cmake).
//
//   attnrt_plugin_manifest LIBRARY OUTPUT [--alias NAME]...
//
// The library is opened with dlopen and its entry point asked for its function table; nothing
// else of it runs. Exit status 0 on success, 1 with a message on stderr otherwise.
#include <attnrt/plugin_abi.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "attnrt_plugin_manifest: %s\n", message.c_str());
  return 1;
}

// A YAML double-quoted scalar: any text survives (colons, '#', quotes, leading spaces).
std::string quoted(const char* text) {
  std::string s = "\"";
  for (const char* c = text; *c; ++c) {
    if (*c == '"' || *c == '\\') s += '\\';
    s += *c;
  }
  return s + "\"";
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return fail("usage: attnrt_plugin_manifest LIBRARY OUTPUT [--alias NAME]...");
  const std::filesystem::path library = argv[1];
  const std::filesystem::path output = argv[2];
  std::vector<std::string> aliases;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--alias") != 0 || i + 1 >= argc)
      return fail(std::string("unexpected argument '") + argv[i] + "'");
    aliases.emplace_back(argv[++i]);
    if (!valid_name(aliases.back())) return fail("alias '" + aliases.back() + "' must match [a-z0-9_]+");
  }

  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return fail(library.string() + ": cannot be loaded: " + dlerror());
  auto entry = reinterpret_cast<attnrt_plugin_entry_fn>(dlsym(handle, ATTNRT_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) return fail(library.string() + ": does not export " ATTNRT_PLUGIN_ENTRY_SYMBOL);
  const attnrt_plugin_api* api = entry(ATTNRT_ABI_VERSION_MAJOR, ATTNRT_ABI_VERSION_MINOR);
  if (api == nullptr || api->struct_size < ATTNRT_STRUCT_SIZE(attnrt_plugin_api, capabilities)) {
    return fail(library.string() + ": the entry point returned no usable function table");
  }
  if (api->name == nullptr || !valid_name(api->name))
    return fail(library.string() + ": plugin name must match [a-z0-9_]+");

  std::string devices;
  if (api->capabilities != nullptr) {
    if (api->capabilities->devices & ATTNRT_DEVICE_BIT_CPU) devices += "cpu";
    if (api->capabilities->devices & ATTNRT_DEVICE_BIT_CUDA) devices += devices.empty() ? "cuda" : ", cuda";
  }

  std::string yaml =
      "# Written by attnrt_add_plugin from the library's own metadata (attnrt_plugin_api):\n"
      "# change the plugin's code, not this file.\n";
  yaml += "name: " + std::string(api->name) + "\n";
  if (api->version && api->version[0]) yaml += "version: " + quoted(api->version) + "\n";
  if (api->description && api->description[0]) yaml += "description: " + quoted(api->description) + "\n";
  yaml += "library: " + library.filename().string() + "\n";
  if (!devices.empty()) yaml += "devices: [" + devices + "]\n";
  if (!aliases.empty()) {
    yaml += "aliases: [";
    for (size_t i = 0; i < aliases.size(); ++i) yaml += (i ? ", " : "") + aliases[i];
    yaml += "]\n";
  }

  // Written beside and renamed: a reader never sees half a manifest.
  const std::filesystem::path tmp = output.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!(out << yaml)) return fail(tmp.string() + ": cannot be written");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, output, ec);
  if (ec) return fail(output.string() + ": " + ec.message());
  return 0;
}
