// `kestrel info` (the GPU and its ceilings) and `kestrel calibrate`.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include "bench/ceilings.h"
#include "bench/report.h"
#include "cli.h"
#include "ops/tuning_table.h"
#include "runtime/compiler.h"
#include "runtime/device.h"

namespace kestrel::cli {
namespace {

void print_ceiling(const char* what, const bench::Ceiling& c, const bench::Ceiling& sheet,
                   const char* unit) {
  const int digits = c.value < 10 ? 2 : 0;
  std::printf("  %-12s %7s %-8s %-18s", what, bench::format_fixed(c.value, digits).c_str(), unit,
              c.source.c_str());
  if (c.source == "measured" && sheet.value > 0)
    std::printf(" %5.1f%% of datasheet %s", 100 * c.value / sheet.value,
                bench::format_fixed(sheet.value, digits).c_str());
  std::printf("\n");
}

void print_ceilings(const bench::Ceilings& c) {
  const bench::Ceilings sheet = bench::datasheet_ceilings(c.gpu);
  std::printf("Ceilings%s:\n",
              c.measured_at.empty() ? "" : (" (measured " + c.measured_at + ")").c_str());
  print_ceiling("copy (r+w)", c.copy_tbps, sheet.copy_tbps, "TB/s");
  print_ceiling("bf16 GEMM", c.bf16_tflops, sheet.bf16_tflops, "TFLOP/s");
  print_ceiling("fp8 GEMM", c.fp8_tflops, sheet.fp8_tflops, "TFLOP/s");
  if (!c.note.empty()) std::printf("  note: %s\n", c.note.c_str());
  const std::string cache = bench::ceilings_cache_path();
  std::printf("  cache: %s\n", cache.empty() ? "off (KESTREL_CACHE_DIR=off)" : cache.c_str());
}

// The tuning entries that calls on this GPU may take, and where they come from.
void print_tuning(const rt::DeviceInfo& dev) {
  const ops::TuningTable* table = nullptr;
  const Status s = ops::active_tuning_table(&table);
  if (!s.ok()) {
    std::printf("Tuning:       %s\n", s.to_string().c_str());
    return;
  }
  const auto rowwise =
      std::count_if(table->rowwise().begin(), table->rowwise().end(),
                    [&](const ops::RowwiseTuned& e) { return e.key.gpu == dev.name; });
  const auto gemm = std::count_if(table->gemm().begin(), table->gemm().end(),
                                  [&](const ops::GemmTuned& e) { return e.key.gpu == dev.name; });
  std::printf("Tuning:       %ld row-wise and %ld GEMM entries for this GPU, from %s\n",
              long(rowwise), long(gemm), ops::active_tuning_table_source().c_str());
}

int run_info() {
  if (!require_gpu()) return kExitFailure;
  const rt::DeviceInfo* dev = nullptr;
  Status s = rt::current_device(&dev);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("GPU:          %s (device %d)\n", dev->name.c_str(), dev->ordinal);
  std::printf("Architecture: %s (compute capability %d.%d)%s\n", dev->arch().c_str(), dev->cc_major,
              dev->cc_minor, dev->is_hopper() ? "" : "  [not Hopper]");
  std::printf("SMs:          %d\n", dev->sm_count);
  std::printf("L2:           %.1f MiB\n", dev->l2_bytes / 1048576.0);
  std::printf("Memory:       %.1f GiB (%.1f GiB free), %d-bit bus\n", total_bytes / 1073741824.0,
              free_bytes / 1073741824.0, int(dev->mem_bus_bits));
  std::printf("CUDA:         runtime %d.%d, driver %d.%d\n", runtime / 1000, runtime % 1000 / 10,
              driver / 1000, driver % 1000 / 10);
  const std::string kc = rt::kernel_cache_dir();
  std::printf("Kernel cache: %s\n", kc.empty() ? "off" : kc.c_str());
  print_tuning(*dev);
  bench::Ceilings c;
  s = bench::get_ceilings(false, &c);
  if (!s.ok()) return fail(kExitFailure, "ceilings: " + s.to_string());
  print_ceilings(c);
  return kExitOk;
}

int run_calibrate() {
  if (!require_gpu()) return kExitFailure;
  std::fprintf(stderr, "measuring copy bandwidth, bf16 and fp8 GEMM 8192^3 ...\n");
  bench::Ceilings c;
  const Status s = bench::get_ceilings(true, &c);
  if (!s.ok()) return fail(kExitFailure, s.to_string());
  std::printf("GPU: %s\n", c.gpu.c_str());
  print_ceilings(c);
  return kExitOk;
}

}  // namespace

Command info_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("info",
                                     "GPU name, SMs, L2, architecture and ceilings "
                                     "(measured once, then cached)");
  return {sub, run_info};
}

Command calibrate_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Remeasure the ceilings (copy bandwidth, cuBLAS bf16 and cuBLASLt fp8 GEMM "
      "8192^3) and cache them");
  return {sub, run_calibrate};
}

}  // namespace kestrel::cli
