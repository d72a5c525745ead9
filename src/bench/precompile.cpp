#include "bench/precompile.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <new>
#include <set>
#include <thread>

#include "runtime/compiler.h"

namespace kestrel::bench {
namespace {

// Each distinct spec's outcome, written by whichever worker compiled it.
enum Outcome : int { kPending = 0, kCompiled, kCached, kFailed };

// The work queue of one precompile, in memory that forked workers share with
// the parent: a claim counter, then an outcome per distinct spec.
struct Queue {
  std::atomic<size_t> next{0};
  std::atomic<int>* outcome = nullptr;  // just past the Queue, in the same mapping
};

void drain(Queue* q, const std::vector<rt::KernelSpec>& distinct, const std::string& arch) {
  for (size_t i = q->next++; i < distinct.size(); i = q->next++) {
    rt::CompiledKernel out;
    const bool ok = rt::compile_kernel(distinct[i], arch, &out).ok();
    q->outcome[i] = !ok ? kFailed : out.from_cache ? kCached : kCompiled;
  }
}

// NVRTC holds a process-wide lock through much of a compile (two threads of
// one process each waited 0.5-1.4 s per kernel on one futex in libnvrtc;
// 16 threads compiled ~1 kernel a second on the H100 machine), so threads
// barely overlap and worker processes do. They pass kernels to the parent
// through the disk cache: without one, threads it is. A worker that dies
// leaves its kernel pending, counted as failed (its launch compiles it).
bool drain_in_processes(Queue* q, int workers, const std::vector<rt::KernelSpec>& distinct,
                        const std::string& arch) {
  std::vector<pid_t> pids;
  for (int w = 0; w < workers; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      drain(q, distinct, arch);
      _exit(0);
    }
    if (pid < 0) break;
    pids.push_back(pid);
  }
  if (pids.empty()) return false;
  for (pid_t pid : pids)
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  return true;
}

}  // namespace

PrecompileResult precompile(const std::vector<rt::KernelSpec>& specs, const std::string& arch,
                            int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  // Each worker holds a few hundred MB while NVRTC runs.
  if (threads <= 0) threads = int(std::clamp(std::thread::hardware_concurrency(), 1u, 32u));
  std::vector<rt::KernelSpec> distinct;
  std::set<std::string> seen;
  for (const auto& s : specs) {
    std::string key = s.describe();
    for (const auto& o : s.options) key += " " + o;
    if (seen.insert(key).second) distinct.push_back(s);
  }
  const int n = std::max(1, std::min<int>(threads, int(distinct.size())));
  const size_t bytes = sizeof(Queue) + distinct.size() * sizeof(std::atomic<int>);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return {0, 0, int(distinct.size()), 0, 0.0};
  Queue* q = new (mem) Queue;
  q->outcome = reinterpret_cast<std::atomic<int>*>(q + 1);
  for (size_t i = 0; i < distinct.size(); ++i) new (&q->outcome[i]) std::atomic<int>(kPending);
  const bool shared_cache = !rt::kernel_cache_dir().empty();
  if (!(n > 1 && shared_cache && drain_in_processes(q, n, distinct, arch))) {
    std::vector<std::thread> pool;
    for (int t = 1; t < n; ++t) pool.emplace_back(drain, q, std::cref(distinct), std::cref(arch));
    drain(q, distinct, arch);
    for (auto& t : pool) t.join();
  }
  PrecompileResult r;
  r.workers = n;
  for (size_t i = 0; i < distinct.size(); ++i) {
    const int o = q->outcome[i];
    ++(o == kCompiled ? r.compiled : o == kCached ? r.cached : r.failed);
  }
  munmap(mem, bytes);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kestrel::bench
