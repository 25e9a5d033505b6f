// append-kv: the KV-cache append of ABI 1.2 (plugin_abi.h, attnrt_append_kv_args), called straight
// through the C table on a small NaN-filled paged cache: the slots a shuffled mapping names get
// their tokens, padding slots (-1) and every other slot stay untouched, and an out-of-range slot
// is refused naming slot_mapping.
#include "append_check.hpp"

#include "fixtures.hpp"
#include "isolation.hpp"

#include <attnrt/harness/host_tensor.hpp>
#include <attnrt/runtime/backend.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace attnrt::check {

std::string check_append_kv(const std::filesystem::path& lib) {
  RawPlugin raw(lib);
  const attnrt_plugin_api& api = raw.api();
  if (api.abi_minor < 2 || !ATTNRT_HAS_FIELD(&api, attnrt_plugin_api, append_kv)) {
    throw CheckSkipped(fmt::format("built against ABI {}.{}: append_kv (ABI 1.2) is never called on it", api.abi_major,
                                   api.abi_minor));
  }
  const attnrt_capabilities& caps = raw.lib->capabilities();
  if (!(caps.features & ATTNRT_FEATURE_APPEND_KV)) {
    if (api.append_kv != nullptr) throw CheckFailed("has an append_kv entry but does not advertise APPEND_KV");
    throw CheckSkipped("does not advertise ATTNRT_FEATURE_APPEND_KV");
  }
  if (api.append_kv == nullptr) throw CheckFailed("advertises APPEND_KV but its append_kv entry is NULL");
  if (!(caps.devices & ATTNRT_DEVICE_BIT_CPU)) throw CheckSkipped("CPU tensors only: the plugin is not a CPU plugin");

  const attnrt_dtype dt = first_dtype(caps);
  const WorkloadSpec spec = base_spec(caps, dt);
  const int32_t heads = 2, dim = spec.head_dim, page_size = 4, pages = 5;
  attnrt_attention_desc d{};
  d.struct_size = sizeof d;
  d.dtype = dt;
  d.head_dim = d.head_dim_v = dim;
  d.heads_q = d.heads_kv = heads;
  d.batch = 1;
  d.seqlen_q = 1;
  d.seqlen_k = pages * page_size;
  d.softmax_scale = 1.0f;
  d.window_left = d.window_right = -1;
  d.is_paged = 1;
  d.page_size = page_size;
  d.device = DLDevice{kDLCPU, 0};
  const DLDataType t = sdk::dl_dtype(dt);
  HostTensor k_cache({pages, page_size, heads, dim}, t), v_cache({pages, page_size, heads, dim}, t);
  k_cache.fill_nan();
  v_cache.fill_nan();
  const int64_t tokens = 9;
  HostTensor k_new({tokens, heads, dim}, t), v_new({tokens, heads, dim}, t);
  std::mt19937_64 rng(3);
  k_new.fill_normal(rng);
  v_new.fill_normal(rng);
  std::vector<int64_t> all(size_t(pages) * page_size);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int64_t> slots(all.begin(), all.begin() + tokens);
  slots[2] = slots[6] = -1;  // padding tokens
  int64_t shape[1] = {tokens};
  DLTensor slot_mapping{slots.data(), DLDevice{kDLCPU, 0}, 1, DLDataType{kDLInt, 64, 1}, shape, nullptr, 0};
  attnrt_append_kv_args a{sizeof a, k_new.dl(), v_new.dl(), &slot_mapping, k_cache.dl(), v_cache.dl()};
  attnrt_exec exec{sizeof exec, nullptr, nullptr, 0, 1};
  report_case("9 tokens, 2 of them padding, into 5 pages of 4");
  sdk::MessageBuffer err;
  if (api.append_kv(raw.inst, &d, &a, &exec, err.get()) != ATTNRT_OK) {
    throw CheckFailed(std::string("append_kv failed: ") + err.text());
  }
  const int64_t row = int64_t(heads) * dim;
  std::vector<bool> written(all.size(), false);
  for (int64_t n = 0; n < tokens; ++n) {
    if (slots[size_t(n)] < 0) continue;
    written[size_t(slots[size_t(n)])] = true;
    for (int64_t e = 0; e < row; ++e) {
      if (k_cache.get(slots[size_t(n)] * row + e) != k_new.get(n * row + e) ||
          v_cache.get(slots[size_t(n)] * row + e) != v_new.get(n * row + e)) {
        throw CheckFailed(fmt::format("token {} did not land in slot {}", n, slots[size_t(n)]));
      }
    }
  }
  for (size_t s = 0; s < written.size(); ++s) {
    if (!written[s] && !std::isnan(k_cache.get(int64_t(s) * row))) {
      throw CheckFailed(fmt::format("slot {} was written though no token maps to it", s));
    }
  }
  report_case("a slot past the cache");
  slots[0] = int64_t(pages) * page_size;
  sdk::MessageBuffer bad;
  const attnrt_status status = api.append_kv(raw.inst, &d, &a, &exec, bad.get());
  if (status != ATTNRT_ERROR_INVALID_ARGUMENT || std::string(bad.text()).find("slot_mapping") == std::string::npos) {
    throw CheckFailed(fmt::format("a slot outside the cache gave {} '{}', not an invalid argument naming slot_mapping",
                                  status_name(status), bad.text()));
  }
  return "tokens land in their slots, padding slots are skipped, nothing else is written; an out-of-range slot is "
         "refused ('" +
         std::string(bad.text()) + "')";
}

}  // namespace attnrt::check
