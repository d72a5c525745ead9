// Times a callable launched on a stream with CUDA events.
//
// Every timed call starts with a cold L2: a read of 256 MiB (at least 4 x L2)
// runs on the stream before the start event (outside the timed region). Calls
// shorter than TimerOptions::graph_below_us are dominated by launch overhead
// and event resolution, so they are captured K at a time into a CUDA graph and
// the graph replay is timed (per-call time = replay / K). Nothing can flush L2
// between captured calls, so a callable offers `slots` independent copies of
// its inputs and outputs and the captured calls rotate over them: with
// rotation_slots() copies the working set of one replay is at least 2 x L2 and
// each call finds its data evicted, as it would be in a real model step.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "bench/device_memory.h"
#include "bench/stats.h"
#include "kestrel/status.h"

namespace kestrel::bench {

// Launches one call on `stream` using input/output copy `slot` (0 <= slot < slots).
using LaunchFn = std::function<Status(cudaStream_t stream, int slot)>;

struct Launchable {
  LaunchFn fn;
  int slots = 1;
};

struct TimerOptions {
  int warmup = 5;
  int runs = 50;
  bool flush_l2 = true;
  // After the flush the GPU idles this long before each timed call (0: the
  // call follows the flush at once). torch_peers.py's peers start after
  // torch.cuda._sleep(1e6), ~0.5 ms; this times Kestrel's calls the same way.
  double idle_us = 0;
  double graph_below_us = 10.0;   // calls shorter than this are timed in graphs
  double graph_span_us = 2000.0;  // aim for replays about this long
  int graph_max_calls = 1000;
};

struct Timing {
  Stats us;            // per call, microseconds
  bool graph = false;  // timed as graph replays
  int calls_per_sample = 1;
  std::string note;  // why the timing deviates from the plan, if it does
};

// Number of copies of a call's `bytes_per_call` working set that together
// exceed 2 x L2, capped at max_slots; 1 when one call alone already does.
int rotation_slots(int64_t bytes_per_call, int64_t l2_bytes, int max_slots = 256);

// Reads `bytes` (a multiple of 16) at `data` on `stream` and nothing else
// (kernels/bench_read.cuh); `sink` takes 4 bytes that are written only if the
// data is not all zero. The "read" peer (streaming loads) and, with evict_l2,
// the L2 flush (loads that displace every line, dirty ones included).
Status launch_read_bytes(cudaStream_t stream, const void* data, size_t bytes, void* sink,
                         bool evict_l2 = false);

class Timer {
 public:
  explicit Timer(cudaStream_t stream) : stream_(stream) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  cudaStream_t stream() const { return stream_; }
  Status time(const Launchable& call, const TimerOptions& opt, Timing* out);

 private:
  Status flush_l2();
  Status idle(double us);
  // What precedes every timed call: the flush, then the idle wait.
  Status before_call(const TimerOptions& opt);
  Status time_direct(const Launchable& call, const TimerOptions& opt, Timing* out);
  // Returns Unsupported (and leaves the stream usable) when capture fails.
  Status time_graph(const Launchable& call, const TimerOptions& opt, int calls, Timing* out);

  cudaStream_t stream_;
  DeviceBuffer flush_buffer_;
};

}  // namespace kestrel::bench
