#include "bench/peers.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "bench/device_memory.h"
#include "runtime/cuda_check.h"
#include "runtime/device.h"
#include "runtime/launcher.h"

namespace kestrel::bench {
namespace {

constexpr size_t kWorkspaceBytes = 64ull << 20;

Status blas_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status::CudaError(std::string(what) + ": " + cublasGetStatusString(s));
}
#define KESTREL_BLAS_RETURN(expr) KESTREL_RETURN_IF_ERROR(blas_status((expr), #expr))

Status out_type(DType out, cudaDataType* t) {
  if (out == DType::kBF16)
    *t = CUDA_R_16BF;
  else if (out == DType::kF16)
    *t = CUDA_R_16F;
  else
    return Status::InvalidArgument("peer GEMM output: must be bf16 or f16");
  return Status::Ok();
}

Status check_dims(int64_t m, int64_t n, int64_t k, int64_t batch) {
  const int64_t lim = int64_t(1) << 31;
  if (m < 1 || n < 1 || k < 1 || batch < 1 || m >= lim || n >= lim || k >= lim || batch >= lim)
    return Status::InvalidArgument("peer GEMM: dimensions must be in [1, 2^31)");
  return Status::Ok();
}

// One cuBLASLt problem: descriptors and the heuristic's algorithm, built once per shape.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct Peers::Impl {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  DeviceBuffer blas_workspace, lt_workspace;
  std::mutex mu;
  std::map<std::tuple<int64_t, int64_t, int64_t>, LtPlan> fp8_plans;

  Status init() {
    KESTREL_BLAS_RETURN(cublasCreate(&blas));
    KESTREL_BLAS_RETURN(cublasLtCreate(&lt));
    // Explicit workspaces: cuBLAS must not allocate while a graph is captured.
    KESTREL_RETURN_IF_ERROR(blas_workspace.allocate(kWorkspaceBytes));
    KESTREL_RETURN_IF_ERROR(lt_workspace.allocate(kWorkspaceBytes));
    KESTREL_BLAS_RETURN(cublasSetWorkspace(blas, blas_workspace.get(), kWorkspaceBytes));
    return Status::Ok();
  }

  // cuBLASLt is column-major: row-major D[M][N] is column-major N x M, so the
  // Lt "A" is our B (stored K x N, transposed) and the Lt "B" is our A (K x M).
  Status fp8_plan(int64_t m, int64_t n, int64_t k, const LtPlan** out) {
    auto key = std::make_tuple(m, n, k);
    auto it = fp8_plans.find(key);
    if (it != fp8_plans.end()) {
      *out = &it->second;
      return Status::Ok();
    }
    LtPlan p;
    KESTREL_BLAS_RETURN(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    KESTREL_BLAS_RETURN(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KESTREL_BLAS_RETURN(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    KESTREL_BLAS_RETURN(
        cublasLtMatrixLayoutCreate(&p.a, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(n), k));
    KESTREL_BLAS_RETURN(
        cublasLtMatrixLayoutCreate(&p.b, CUDA_R_8F_E4M3, uint64_t(k), uint64_t(m), k));
    KESTREL_BLAS_RETURN(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, uint64_t(n), uint64_t(m), n));
    cublasLtMatmulPreference_t pref = nullptr;
    KESTREL_BLAS_RETURN(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof ws);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    KESTREL_BLAS_RETURN(hs);
    if (found == 0) return Status::Unsupported("cuBLASLt has no e4m3 algorithm for this shape/GPU");
    p.algo = result.algo;
    *out = &fp8_plans.emplace(key, p).first->second;
    return Status::Ok();
  }
};

Status Peers::get(Peers** out) {
  static std::mutex mu;
  // Never destroyed: handles must not be torn down after the CUDA runtime.
  static auto* by_device = new std::map<int, Peers*>();
  int dev = 0;
  KESTREL_CUDA_RETURN(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  Peers*& slot = (*by_device)[dev];
  if (!slot) {
    auto impl = std::make_unique<Impl>();
    KESTREL_RETURN_IF_ERROR(impl->init());
    slot = new Peers(impl.release());
  }
  *out = slot;
  return Status::Ok();
}

Status Peers::gemm_bf16(cudaStream_t stream, const void* a, const void* b, void* c, int64_t m,
                        int64_t n, int64_t k, int64_t batch, DType out) {
  KESTREL_RETURN_IF_ERROR(check_dims(m, n, k, batch));
  cudaDataType ct;
  KESTREL_RETURN_IF_ERROR(out_type(out, &ct));
  const float alpha = 1.0f, beta = 0.0f;
  std::lock_guard<std::mutex> lock(impl_->mu);
  KESTREL_BLAS_RETURN(cublasSetStream(impl_->blas, stream));
  // Column-major C^T (N x M) = B (op T of the stored K x N) * A^T (stored K x M).
  KESTREL_BLAS_RETURN(cublasGemmStridedBatchedEx(
      impl_->blas, CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(m), int(k), &alpha, b, CUDA_R_16BF, int(k),
      n * k, a, CUDA_R_16BF, int(k), m * k, &beta, c, ct, int(n), m * n, int(batch),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

Status Peers::gemv_bf16(cudaStream_t stream, const void* a, const void* x, void* c, int64_t m,
                        int64_t k, int64_t batch, DType out) {
  KESTREL_RETURN_IF_ERROR(check_dims(m, 1, k, batch));
  cudaDataType ct;
  KESTREL_RETURN_IF_ERROR(out_type(out, &ct));
  const float alpha = 1.0f, beta = 0.0f;
  std::lock_guard<std::mutex> lock(impl_->mu);
  KESTREL_BLAS_RETURN(cublasSetStream(impl_->blas, stream));
  // Column-major c (M x 1) = A^T-as-stored (op T of K x M) * x (K x 1).
  KESTREL_BLAS_RETURN(cublasGemmStridedBatchedEx(
      impl_->blas, CUBLAS_OP_T, CUBLAS_OP_N, int(m), 1, int(k), &alpha, a, CUDA_R_16BF, int(k),
      m * k, x, CUDA_R_16BF, int(k), k, &beta, c, ct, int(m), m, int(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

Status Peers::gemm_fp8(cudaStream_t stream, const void* a, const void* b, void* d, int64_t m,
                       int64_t n, int64_t k, float alpha, const void* r) {
  KESTREL_RETURN_IF_ERROR(check_dims(m, n, k, 1));
  std::lock_guard<std::mutex> lock(impl_->mu);
  const LtPlan* p = nullptr;
  KESTREL_RETURN_IF_ERROR(impl_->fp8_plan(m, n, k, &p));
  const float beta = r ? 1.0f : 0.0f;
  KESTREL_BLAS_RETURN(cublasLtMatmul(impl_->lt, p->desc, &alpha, b, p->a, a, p->b, &beta, r ? r : d,
                                     p->c, d, p->c, &p->algo, impl_->lt_workspace.get(),
                                     kWorkspaceBytes, stream));
  return Status::Ok();
}

Status launch_silu_mul(cudaStream_t stream, const void* h, void* out, int64_t rows, int64_t n) {
  KESTREL_RETURN_IF_ERROR(check_dims(rows, n, 1, 1));
  const rt::DeviceInfo* dev = nullptr;
  KESTREL_RETURN_IF_ERROR(rt::current_device(&dev));
  const bool vec8 = n % 8 == 0;
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(
      rt::Kernel::get({"bench_silu_mul.cuh",
                       vec8 ? "kestrel::silu_mul_kernel<true>" : "kestrel::silu_mul_kernel<false>",
                       {}},
                      &kernel));
  const int64_t items = rows * (vec8 ? n / 8 : n);
  rt::LaunchShape shape;
  shape.block = dim3(256);
  shape.grid = dim3(unsigned(std::min<int64_t>((items + 255) / 256, int64_t(dev->sm_count) * 8)));
  return kernel(shape, stream, h, out, (long long)rows, (long long)n);
}

Status make_copy_peer(int64_t bytes, int slots, PeerLaunch* out) {
  const size_t half = size_t(std::max<int64_t>(bytes / 2, 1));
  slots = std::max(slots, 1);
  auto buffers = std::make_shared<std::pair<DeviceBuffer, DeviceBuffer>>();
  KESTREL_RETURN_IF_ERROR(buffers->first.allocate(half * size_t(slots)));
  KESTREL_RETURN_IF_ERROR(buffers->second.allocate(half * size_t(slots)));
  out->name = "copy";
  out->call.slots = slots;
  out->call.fn = [buffers, half](cudaStream_t stream, int slot) {
    const size_t off = half * size_t(slot);
    KESTREL_CUDA_RETURN(cudaMemcpyAsync(buffers->second.bytes_at(off), buffers->first.bytes_at(off),
                                        half, cudaMemcpyDeviceToDevice, stream));
    return Status::Ok();
  };
  return Status::Ok();
}

Status make_read_peer(int64_t bytes, int slots, PeerLaunch* out) {
  const size_t len = (size_t(std::max<int64_t>(bytes, 16)) + 15) / 16 * 16;
  slots = std::max(slots, 1);
  auto buffer = std::make_shared<DeviceBuffer>();
  KESTREL_RETURN_IF_ERROR(buffer->allocate(len * size_t(slots) + 64));
  KESTREL_CUDA_RETURN(cudaMemset(buffer->get(), 0, buffer->size()));
  out->name = "read";
  out->call.slots = slots;
  out->call.fn = [buffer, len](cudaStream_t stream, int slot) {
    return launch_read_bytes(stream, buffer->bytes_at(len * size_t(slot)), len,
                             buffer->bytes_at(buffer->size() - 64));
  };
  return Status::Ok();
}

static Status check_streams(int reads, int writes) {
  if (reads < 1 || reads > 2 || writes < 0 || writes > 2)
    return Status::InvalidArgument("stream peer: reads must be 1 or 2 and writes 0 to 2, got " +
                                   std::to_string(reads) + " and " + std::to_string(writes));
  return Status::Ok();
}

Status launch_stream_bytes(cudaStream_t stream, const void* in, void* out, int64_t n16, int reads,
                           int writes) {
  KESTREL_RETURN_IF_ERROR(check_streams(reads, writes));
  if (n16 < 1)
    return Status::InvalidArgument("n16: must be at least 1, got " + std::to_string(n16));
  // The names kernel_catalog.cpp precompiles; chunks of kStreamThreads x kStreamWords words.
  rt::Kernel kernel;
  KESTREL_RETURN_IF_ERROR(rt::Kernel::get({"bench_read.cuh",
                                           "kestrel::stream_bytes_kernel<" + std::to_string(reads) +
                                               ", " + std::to_string(writes) + ">",
                                           {}},
                                          &kernel));
  constexpr int64_t kChunk = 512 * 8;
  rt::LaunchShape shape;
  shape.block = dim3(512);
  shape.grid = dim3(unsigned((n16 + kChunk - 1) / kChunk));
  return kernel(shape, stream, in, out, (unsigned long long)n16);
}

Status make_stream_peer(int64_t stream_bytes, int reads, int writes, int slots, PeerLaunch* out) {
  KESTREL_RETURN_IF_ERROR(check_streams(reads, writes));
  const size_t len = (size_t(std::max<int64_t>(stream_bytes, 16)) + 15) / 16 * 16;
  slots = std::max(slots, 1);
  auto buffers = std::make_shared<std::pair<DeviceBuffer, DeviceBuffer>>();
  KESTREL_RETURN_IF_ERROR(buffers->first.allocate(len * size_t(reads * slots)));
  KESTREL_RETURN_IF_ERROR(buffers->second.allocate(len * size_t(std::max(writes, 1) * slots)));
  KESTREL_CUDA_RETURN(cudaMemset(buffers->first.get(), 0, buffers->first.size()));
  out->name = "stream";
  out->call.slots = slots;
  out->call.fn = [buffers, len, reads, writes](cudaStream_t stream, int slot) {
    return launch_stream_bytes(stream, buffers->first.bytes_at(len * size_t(reads * slot)),
                               buffers->second.bytes_at(len * size_t(std::max(writes, 1) * slot)),
                               int64_t(len / 16), reads, writes);
  };
  return Status::Ok();
}

}  // namespace kestrel::bench
