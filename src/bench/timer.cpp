#include "bench/timer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel::bench {
namespace {

class Events {
 public:
  Events() = default;
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  Status create(int n) {
    for (int i = 0; i < n; ++i) {
      cudaEvent_t e = nullptr;
      KESTREL_CUDA_RETURN(cudaEventCreate(&e));
      events_.push_back(e);
    }
    return Status::Ok();
  }
  cudaEvent_t operator[](int i) const { return events_[size_t(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

Status elapsed_us(cudaEvent_t start, cudaEvent_t stop, double* us) {
  float ms = 0;
  KESTREL_CUDA_RETURN(cudaEventElapsedTime(&ms, start, stop));
  *us = double(ms) * 1000.0;
  return Status::Ok();
}

// Owns a graph and its executable; ending a failed capture must not leak either.
struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

}  // namespace

int rotation_slots(int64_t bytes_per_call, int64_t l2_bytes, int max_slots) {
  if (bytes_per_call <= 0) return 1;
  const int64_t want = (2 * l2_bytes + bytes_per_call - 1) / bytes_per_call;
  return int(std::clamp<int64_t>(want, 1, max_slots));
}

Status Timer::flush_l2() {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  if (!flush_buffer_.get()) {
    // The flush buffer is zeroed once; every flush then reads it with
    // default-policy loads (kernels/bench_read.cuh says why): L2 is left
    // clean, not full of dirty lines that the timed call would have to write
    // back. 256 MiB, as scripts/torch_peers.py flushes.
    const size_t bytes = std::max(size_t(256) << 20, 4 * size_t(dev->l2_bytes));
    KESTREL_RETURN_IF_ERROR(flush_buffer_.allocate(bytes + 64));
    KESTREL_CUDA_RETURN(cudaMemset(flush_buffer_.get(), 0, flush_buffer_.size()));
  }
  return launch_read_bytes(stream_, flush_buffer_.get(), flush_buffer_.size() - 64,
                           flush_buffer_.bytes_at(flush_buffer_.size() - 64), true);
}

Status Timer::idle(double us) {
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get({"bench_read.cuh", "kestrel::idle_kernel", {}}, &kernel));
  rt::LaunchShape shape;
  shape.block = dim3(1);
  shape.grid = dim3(1);
  return kernel(shape, stream_, (unsigned long long)(us * 1e3));
}

Status Timer::before_call(const TimerOptions& opt) {
  if (opt.flush_l2) KESTREL_RETURN_IF_ERROR(flush_l2());
  if (opt.idle_us > 0) KESTREL_RETURN_IF_ERROR(idle(opt.idle_us));
  return Status::Ok();
}

Status launch_read_bytes(cudaStream_t stream, const void* data, size_t bytes, void* sink,
                         bool evict_l2) {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"bench_read.cuh",
                       std::string("kestrel::read_bytes_kernel<") + (evict_l2 ? "true" : "false") +
                           ">",
                       {}},
                      &kernel));
  rt::LaunchShape shape;
  shape.block = dim3(512);
  shape.grid = dim3(unsigned(dev->sm_count * 4));
  const unsigned long long n16 = bytes / 16;
  return kernel(shape, stream, data, n16, sink);
}

Status Timer::time(const Launchable& call, const TimerOptions& opt, Timing* out) {
  if (opt.runs < 1) return Status::InvalidArgument("runs: must be at least 1");
  const int slots = std::max(call.slots, 1);
  // Warm-up also compiles and loads kernels, which must not happen in a capture.
  for (int i = 0; i < opt.warmup; ++i) KESTREL_RETURN_IF_ERROR(call.fn(stream_, i % slots));
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream_));

  // A short direct measurement decides between direct and graph timing.
  Timing probe;
  TimerOptions probe_opt = opt;
  probe_opt.runs = 3;
  KESTREL_RETURN_IF_ERROR(time_direct(call, probe_opt, &probe));
  if (probe.us.median >= opt.graph_below_us) return time_direct(call, opt, out);

  const double per_call = std::max(probe.us.median, 0.5);
  const int calls =
      std::clamp(int(std::ceil(opt.graph_span_us / per_call)), 1, opt.graph_max_calls);
  Status s = time_graph(call, opt, calls, out);
  if (s.code() != StatusCode::kUnsupported) return s;
  KESTREL_RETURN_IF_ERROR(time_direct(call, opt, out));
  out->note = "graph capture failed (" + s.message() + "); timed directly";
  return Status::Ok();
}

Status Timer::time_direct(const Launchable& call, const TimerOptions& opt, Timing* out) {
  const int slots = std::max(call.slots, 1);
  Events ev;
  KESTREL_RETURN_IF_ERROR(ev.create(2 * opt.runs));
  for (int r = 0; r < opt.runs; ++r) {
    KESTREL_RETURN_IF_ERROR(before_call(opt));
    KESTREL_CUDA_RETURN(cudaEventRecord(ev[2 * r], stream_));
    KESTREL_RETURN_IF_ERROR(call.fn(stream_, r % slots));
    KESTREL_CUDA_RETURN(cudaEventRecord(ev[2 * r + 1], stream_));
    // One run at a time, as the torch peer script times (scripts/torch_peers.py):
    // the next flush then starts on an idle GPU, and the host's work for the
    // call overlaps the flush. Runs queued back to back read 0.7-1.3 us more
    // per call for the same kernels (H100, 32768 x 256 / 1024 row-wise
    // forwards, 12-88 us; session 9).
    KESTREL_CUDA_RETURN(cudaEventSynchronize(ev[2 * r + 1]));
  }
  std::vector<double> samples(size_t(opt.runs));
  for (int r = 0; r < opt.runs; ++r)
    KESTREL_RETURN_IF_ERROR(elapsed_us(ev[2 * r], ev[2 * r + 1], &samples[size_t(r)]));
  *out = Timing{};
  out->us = summarize(std::move(samples));
  return Status::Ok();
}

Status Timer::time_graph(const Launchable& call, const TimerOptions& opt, int calls, Timing* out) {
  const int slots = std::max(call.slots, 1);
  Graph g;
  // Thread-local mode: other threads' CUDA calls must not invalidate the capture.
  KESTREL_CUDA_RETURN(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  Status launched = Status::Ok();
  for (int i = 0; i < calls && launched.ok(); ++i) launched = call.fn(stream_, i % slots);
  const cudaError_t ended = cudaStreamEndCapture(stream_, &g.graph);
  if (!launched.ok() || ended != cudaSuccess) {
    cudaGetLastError();  // capture errors are not sticky; clear them for later calls
    return Status::Unsupported(!launched.ok() ? launched.message() : cudaGetErrorString(ended));
  }
  if (cudaGraphInstantiate(&g.exec, g.graph, 0) != cudaSuccess) {
    cudaGetLastError();
    return Status::Unsupported("cudaGraphInstantiate failed");
  }
  KESTREL_CUDA_RETURN(cudaGraphLaunch(g.exec, stream_));  // first replay uploads the graph
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream_));

  Events ev;
  KESTREL_RETURN_IF_ERROR(ev.create(2 * opt.runs));
  for (int r = 0; r < opt.runs; ++r) {
    KESTREL_RETURN_IF_ERROR(before_call(opt));
    KESTREL_CUDA_RETURN(cudaEventRecord(ev[2 * r], stream_));
    KESTREL_CUDA_RETURN(cudaGraphLaunch(g.exec, stream_));
    KESTREL_CUDA_RETURN(cudaEventRecord(ev[2 * r + 1], stream_));
  }
  KESTREL_CUDA_RETURN(cudaStreamSynchronize(stream_));
  std::vector<double> samples(size_t(opt.runs));
  for (int r = 0; r < opt.runs; ++r) {
    double us = 0;
    KESTREL_RETURN_IF_ERROR(elapsed_us(ev[2 * r], ev[2 * r + 1], &us));
    samples[size_t(r)] = us / calls;
  }
  *out = Timing{};
  out->us = summarize(std::move(samples));
  out->graph = true;
  out->calls_per_sample = calls;
  return Status::Ok();
}

}  // namespace kestrel::bench
