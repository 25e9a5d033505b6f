#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "/work/main/plugins/sdpa/online_softmax.hpp"
namespace attnrt::plugins::sdpa {
void sm_old(const OnlineSoftmaxTile&);
void sm_new(const OnlineSoftmaxTile&);
}  // namespace attnrt::plugins::sdpa
using namespace attnrt::plugins::sdpa;
int main(int argc, char** argv) {
  const int rows = 128, bk = 256, hv = 64;
  std::vector<float> s0(rows * bk), s(rows * bk), o(rows * hv), m(rows), l(rows), o2(rows * hv), m2(rows), l2(rows);
  std::vector<uint16_t> p(rows * bk), p2(rows * bk);
  std::mt19937 g(1);
  std::normal_distribution<float> n(0, 3);
  for (auto& x : s0) x = n(g);
  auto run = [&](OnlineSoftmaxFn f, std::vector<float>& o, std::vector<float>& m, std::vector<float>& l,
                 std::vector<uint16_t>& p, int reps) {
    double best = 1e9;
    for (int it = 0; it < reps; ++it) {
      std::memcpy(s.data(), s0.data(), s.size() * 4);
      for (int r = 0; r < rows; ++r) {
        m[r] = 0.5f;
        l[r] = 3.0f;
      }
      for (auto& x : o) x = 1.0f;
      auto t0 = std::chrono::steady_clock::now();
      f({s.data(), bk, rows, bk, 0.125f, m.data(), l.data(), o.data(), hv, hv, p.data(), bk, bk});
      auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return best;
  };
  double a = 0, b = 0;
  for (int k = 0; k < 5; ++k) {
    a = run(sm_old, o, m, l, p, 2000);
    b = run(sm_new, o2, m2, l2, p2, 2000);
  }
  int diff = 0;
  for (size_t i = 0; i < p.size(); ++i) diff += p[i] != p2[i];
  double md = 0;
  for (int r = 0; r < rows; ++r) md = std::max(md, (double)std::fabs(l[r] - l2[r]) / l[r]);
  std::printf("old %.2f us new %.2f us  p diffs %d  l rel diff %.2e m eq %d\n", a, b, diff, md, m == m2);
}
