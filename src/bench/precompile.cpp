#include "bench/precompile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "runtime/compiler.h"

namespace kestrel::bench {

PrecompileResult precompile(const std::vector<rt::KernelSpec>& specs, const std::string& arch,
                            int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<rt::KernelSpec> distinct;
  std::set<std::string> seen;
  for (const auto& s : specs) {
    std::string key = s.describe();
    for (const auto& o : s.options) key += " " + o;
    if (seen.insert(key).second) distinct.push_back(s);
  }
  std::atomic<size_t> next{0};
  std::atomic<int> compiled{0}, cached{0}, failed{0};
  auto work = [&] {
    for (size_t i = next++; i < distinct.size(); i = next++) {
      rt::CompiledKernel out;
      if (!rt::compile_kernel(distinct[i], arch, &out).ok()) {
        ++failed;
      } else {
        ++(out.from_cache ? cached : compiled);
      }
    }
  };
  const int n = std::max(1, std::min<int>(threads, int(distinct.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {compiled.load(), cached.load(), failed.load(), n, seconds};
}

}  // namespace kestrel::bench
