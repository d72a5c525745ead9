#include "bench/ceilings.h"

#include <cuda_runtime_api.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "bench/device_memory.h"
#include "bench/peers.h"
#include "bench/timer.h"
#include "random.h"
#include "runtime/compiler.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"

namespace kestrel::bench {
namespace {

constexpr int64_t kGemmSize = 8192;

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

Ceiling sheet(double v) { return {v, "datasheet"}; }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Operands of normal(0, 1) data, as torch.randn gives the peers: a GEMM on
// zeros (or on a few distinct values) toggles fewer bits, draws less power
// and runs faster than one on real data.
template <typename T>
Status upload_vector(DeviceBuffer* buf, const std::vector<T>& host) {
  KESTREL_RETURN_IF_ERROR(buf->allocate(host.size() * sizeof(T)));
  return buf->upload(host.data(), host.size() * sizeof(T));
}

TimerOptions ceiling_timer() {
  TimerOptions o;
  o.warmup = 3;
  o.runs = 20;
  o.flush_l2 = false;    // the buffers dwarf L2; flushing would only add noise
  o.graph_below_us = 0;  // every call here takes hundreds of microseconds
  return o;
}

Status measure_copy(Timer& timer, double* tbps) {
  // 2 GiB each way as in peers-h100.md; smaller when memory is short.
  for (int64_t bytes : {int64_t(2) << 30, int64_t(512) << 20}) {
    DeviceBuffer src, dst;
    if (!src.allocate(size_t(bytes)).ok() || !dst.allocate(size_t(bytes)).ok()) {
      cudaGetLastError();
      continue;
    }
    Launchable copy;
    copy.fn = [&](cudaStream_t s, int) {
      KESTREL_CUDA_RETURN(
          cudaMemcpyAsync(dst.get(), src.get(), size_t(bytes), cudaMemcpyDeviceToDevice, s));
      return Status::Ok();
    };
    Timing t;
    KESTREL_RETURN_IF_ERROR(timer.time(copy, ceiling_timer(), &t));
    *tbps = 2.0 * double(bytes) / (t.us.median * 1e-6) / 1e12;
    return Status::Ok();
  }
  return Status::CudaError("could not allocate copy buffers");
}

Status measure_gemm(Timer& timer, bool fp8, double* tflops) {
  const int64_t n = kGemmSize;
  Peers* peers = nullptr;
  KESTREL_RETURN_IF_ERROR(Peers::get(&peers));
  DeviceBuffer a, b, c;
  if (fp8) {
    KESTREL_RETURN_IF_ERROR(upload_vector(&a, testing::random_e4m3(n * n, 1)));
    KESTREL_RETURN_IF_ERROR(upload_vector(&b, testing::random_e4m3(n * n, 2)));
  } else {
    KESTREL_RETURN_IF_ERROR(upload_vector(&a, testing::random_bf16(n * n, 1)));
    KESTREL_RETURN_IF_ERROR(upload_vector(&b, testing::random_bf16(n * n, 2)));
  }
  KESTREL_RETURN_IF_ERROR(c.allocate(size_t(n * n) * 2));
  Launchable gemm;
  gemm.fn = [&](cudaStream_t s, int) {
    return fp8 ? peers->gemm_fp8(s, a.get(), b.get(), c.get(), n, n, n)
               : peers->gemm_bf16(s, a.get(), b.get(), c.get(), n, n, n);
  };
  Timing t;
  KESTREL_RETURN_IF_ERROR(timer.time(gemm, ceiling_timer(), &t));
  *tflops = 2.0 * double(n) * double(n) * double(n) / (t.us.median * 1e-6) / 1e12;
  return Status::Ok();
}

// Replaces `field` by a measurement, or records in `note` why it keeps its fallback.
void take(const Status& s, double value, const char* what, Ceiling* field, std::string* note) {
  if (s.ok()) {
    *field = {value, "measured"};
    return;
  }
  if (!note->empty()) *note += "; ";
  *note += std::string(what) + " not measured: " + s.to_string();
}

Status read_cache(const std::string& path, nlohmann::json* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound("no ceilings cache at " + path);
  try {
    f >> *out;
  } catch (const std::exception& e) {
    return Status::Internal(path + ": " + e.what());
  }
  return Status::Ok();
}

void make_dirs(const std::string& dir) {
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    ::mkdir(dir.substr(0, pos).c_str(), 0755);  // existing parts fail harmlessly
    if (pos == std::string::npos) return;
  }
}

Status write_cache(const Ceilings& c) {
  const std::string path = ceilings_cache_path();
  if (path.empty()) return Status::Ok();
  make_dirs(rt::kernel_cache_dir());
  nlohmann::json all = nlohmann::json::object();
  if (!read_cache(path, &all).ok() || !all.is_object()) all = nlohmann::json::object();
  all[c.gpu] = ceilings_to_json(c);
  // Write-then-rename: a concurrent reader never sees half a file.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    if (!f) return Status::Internal("cannot write " + tmp);
    f << all.dump(2) << "\n";
    if (!f) return Status::Internal("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Internal("cannot rename " + tmp + " to " + path);
  return Status::Ok();
}

nlohmann::json ceiling_json(const Ceiling& c) { return {{"value", c.value}, {"source", c.source}}; }

Status ceiling_from(const nlohmann::json& j, const char* key, Ceiling* out) {
  if (!j.contains(key) || !j[key].is_object() || !j[key].contains("value") ||
      !j[key]["value"].is_number())
    return Status::InvalidArgument(std::string("ceilings: missing numeric ") + key + ".value");
  out->value = j[key]["value"].get<double>();
  out->source = j[key].value("source", "unknown");
  return Status::Ok();
}

}  // namespace

Ceilings datasheet_ceilings(const std::string& gpu) {
  Ceilings c;
  c.gpu = gpu;
  c.copy_tbps = c.bf16_tflops = c.fp8_tflops = {0, "unknown"};
  if (contains(gpu, "GH200")) return c;  // several memory configurations share the name
  const bool nvl = contains(gpu, "NVL");
  if (contains(gpu, "H200")) {
    c.copy_tbps = sheet(4.8);
    c.bf16_tflops = sheet(nvl ? 835 : 989);
    c.fp8_tflops = sheet(nvl ? 1671 : 1979);
  } else if (contains(gpu, "H100")) {
    if (nvl) {
      c.copy_tbps = sheet(3.9);
      c.bf16_tflops = sheet(835);
      c.fp8_tflops = sheet(1671);
    } else if (contains(gpu, "PCIe")) {
      c.copy_tbps = sheet(2.0);
      c.bf16_tflops = sheet(756);
      c.fp8_tflops = sheet(1513);
    } else {  // SXM, reported as "NVIDIA H100 80GB HBM3"
      c.copy_tbps = sheet(3.35);
      c.bf16_tflops = sheet(989);
      c.fp8_tflops = sheet(1979);
    }
  }
  return c;
}

nlohmann::json ceilings_to_json(const Ceilings& c) {
  return {{"gpu", c.gpu},
          {"copy_tbps", ceiling_json(c.copy_tbps)},
          {"bf16_tflops", ceiling_json(c.bf16_tflops)},
          {"fp8_tflops", ceiling_json(c.fp8_tflops)},
          {"measured_at", c.measured_at},
          {"note", c.note}};
}

Status ceilings_from_json(const nlohmann::json& j, Ceilings* out) {
  if (!j.is_object()) return Status::InvalidArgument("ceilings: not a JSON object");
  Ceilings c;
  c.gpu = j.value("gpu", "");
  KESTREL_RETURN_IF_ERROR(ceiling_from(j, "copy_tbps", &c.copy_tbps));
  KESTREL_RETURN_IF_ERROR(ceiling_from(j, "bf16_tflops", &c.bf16_tflops));
  KESTREL_RETURN_IF_ERROR(ceiling_from(j, "fp8_tflops", &c.fp8_tflops));
  c.measured_at = j.value("measured_at", "");
  c.note = j.value("note", "");
  *out = c;
  return Status::Ok();
}

Status measure_ceilings(Ceilings* out) {
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  Ceilings c = datasheet_ceilings(dev->name);
  if (c.copy_tbps.value == 0) {  // unknown GPU: the bus's theoretical peak
    c.copy_tbps = {2.0 * dev->mem_clock_khz * 1e3 * dev->mem_bus_bits / 8 / 1e12,
                   "device properties"};
  }
  cudaStream_t stream = nullptr;
  KESTREL_CUDA_RETURN(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  double v = 0;
  {
    Timer timer(stream);
    Status s = measure_copy(timer, &v);
    take(s, v, "copy bandwidth", &c.copy_tbps, &c.note);
    s = measure_gemm(timer, false, &v);
    take(s, v, "bf16 GEMM", &c.bf16_tflops, &c.note);
    s = measure_gemm(timer, true, &v);
    take(s, v, "fp8 GEMM", &c.fp8_tflops, &c.note);
  }
  cudaStreamDestroy(stream);
  if (c.copy_tbps.source != "measured" && c.bf16_tflops.source != "measured" &&
      c.fp8_tflops.source != "measured")
    return Status::CudaError("no ceiling could be measured: " + c.note);
  c.measured_at = utc_now();
  *out = c;
  return Status::Ok();
}

std::string ceilings_cache_path() {
  const std::string dir = rt::kernel_cache_dir();
  return dir.empty() ? std::string() : dir + "/ceilings.json";
}

Status get_ceilings(bool remeasure, Ceilings* out) {
  static std::mutex mu;
  static std::map<std::string, Ceilings> memo;  // measure at most once per process
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  std::lock_guard<std::mutex> lock(mu);
  if (!remeasure) {
    auto it = memo.find(dev->name);
    if (it != memo.end()) {
      *out = it->second;
      return Status::Ok();
    }
    nlohmann::json all;
    Ceilings cached;
    const std::string path = ceilings_cache_path();
    if (!path.empty() && read_cache(path, &all).ok() && all.is_object() &&
        all.contains(dev->name) && ceilings_from_json(all[dev->name], &cached).ok()) {
      *out = memo[dev->name] = cached;
      return Status::Ok();
    }
  }
  Ceilings c;
  KESTREL_RETURN_IF_ERROR(measure_ceilings(&c));
  // An unwritable cache costs a remeasurement next run, not this result.
  const Status cached = write_cache(c);
  *out = memo[dev->name] = c;
  if (!cached.ok())
    out->note += (out->note.empty() ? "" : "; ") + ("not cached: " + cached.message());
  return Status::Ok();
}

}  // namespace kestrel::bench
