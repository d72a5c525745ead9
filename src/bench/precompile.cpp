#include "bench/precompile.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "runtime/compiler.h"

namespace kestrel::bench {

PrecompileResult precompile(const std::vector<rt::KernelSpec>& specs, const std::string& arch,
                            int threads) {
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
  return {compiled.load(), cached.load(), failed.load()};
}

}  // namespace kestrel::bench
