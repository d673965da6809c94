// The generators' one way of filling a case on several host threads.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace pagedattn::audit {

// Runs fn(i) for every i in [0, n) on `threads` host threads (i, i + threads, ... each).
template <class F>
void parallel_for(std::int64_t n, int threads, F fn) {
  threads = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      for (std::int64_t i = t; i < n; i += threads) fn(i);
    });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace pagedattn::audit
