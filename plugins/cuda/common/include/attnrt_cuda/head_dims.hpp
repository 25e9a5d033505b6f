// Host side: a kernel family's compiled head dims as one list. The build writes the list once
// (the plugin's CMakeLists.txt: one translation unit per entry, and the same list passed to the
// plugin class as a macro), and the plugin's support query, capabilities and dispatch all read
// it from here, so a head_dim is advertised exactly when its kernels were compiled.
#pragma once

#include <attnrt/plugin.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#include <utility>

namespace attnrt::cuda {

template <int... HDs>
struct HeadDims {
  static constexpr std::array<int, sizeof...(HDs)> kList{HDs...};
  static constexpr int kMin = std::min({HDs...});
  static constexpr int kMax = std::max({HDs...});

  static constexpr bool contains(int hd) { return ((hd == HDs) || ...); }

  // "32, 64, 128": for refusal reasons.
  static std::string describe() {
    std::string s;
    for (int hd : kList) s += (s.empty() ? "" : ", ") + std::to_string(hd);
    return s;
  }

  // "" when head_dim is compiled, else the reason.
  static std::string gap(int head_dim) {
    if (contains(head_dim)) return "";
    return "head_dim " + std::to_string(head_dim) + " is not one of the compiled " + describe();
  }

  // Calls fn(std::integral_constant<int, hd>{}) for the compiled hd == head_dim; throws
  // UNSUPPORTED otherwise (supports() refuses it first).
  template <class Fn>
  static void dispatch(int head_dim, Fn&& fn) {
    const bool found = ((head_dim == HDs ? (fn(std::integral_constant<int, HDs>{}), true) : false) || ...);
    if (!found) throw sdk::Error(ATTNRT_ERROR_UNSUPPORTED, gap(head_dim));
  }
};

}  // namespace attnrt::cuda
