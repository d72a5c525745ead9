// Compiling ahead for `kestrel tune`: each distinct kernel once, in parallel,
// into the disk cache that the launches read.
#include "bench/precompile.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "bench/op_registry.h"
#include "scoped_env.h"

namespace kestrel::bench {
namespace {

TEST(Precompile, CompilesEachDistinctKernelOnceThenReadsTheCache) {
  char tmpl[] = "/tmp/kestrel-precompile-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  testing::ScopedEnv cache("KESTREL_CACHE_DIR", dir);
  const rt::KernelSpec finish{"cross_entropy.cuh", "kestrel::xent_finish_kernel", {}};
  const rt::KernelSpec count{"cross_entropy.cuh", "kestrel::xent_count_kernel", {}};
  const rt::KernelSpec read{"bench_read.cuh", "kestrel::read_bytes_kernel<true>", {}};
  const std::vector<rt::KernelSpec> specs = {finish, count, finish, read, count};

  PrecompileResult r = precompile(specs, "sm_90a", 2);
  EXPECT_EQ(r.compiled, 3);
  EXPECT_EQ(r.cached, 0);
  EXPECT_EQ(r.failed, 0);
  r = precompile(specs, "sm_90a", 3);
  EXPECT_EQ(r.compiled, 0);
  EXPECT_EQ(r.cached, 3);

  // A kernel that does not compile is counted, not fatal: its launch reports it.
  r = precompile({{"cross_entropy.cuh", "kestrel::no_such_kernel", {}}, finish}, "sm_90a", 4);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.cached, 1);
  std::filesystem::remove_all(dir);
}

// The workers are processes that hand kernels over through the disk cache;
// with the cache off they are threads, and the counts are the same.
TEST(Precompile, WithoutADiskCacheCompilesOnThreads) {
  testing::ScopedEnv cache("KESTREL_CACHE_DIR", "off");
  const rt::KernelSpec finish{"cross_entropy.cuh", "kestrel::xent_finish_kernel", {}};
  const rt::KernelSpec count{"cross_entropy.cuh", "kestrel::xent_count_kernel", {}};
  const PrecompileResult r = precompile(
      {finish, count, {"cross_entropy.cuh", "kestrel::no_such_kernel", {}}}, "sm_90a", 2);
  EXPECT_EQ(r.compiled, 2);
  EXPECT_EQ(r.cached, 0);
  EXPECT_EQ(r.failed, 1);
  EXPECT_EQ(r.workers, 2);
}

// `kestrel tune gemv|gemm|dual_gemm` compiles ahead what each configuration
// names (no GPU needed to name them): the kernel of that configuration.
TEST(Precompile, EveryGemvAndGemmConfigurationNamesItsKernel) {
  for (const char* name : {"gemv", "gemm", "dual_gemm"}) {
    SCOPED_TRACE(name);
    const OpInfo* op = nullptr;
    ASSERT_TRUE(lookup_op(builtin_registry(), name, &op).ok());
    ASSERT_TRUE(op->configs && op->kernels);
    Params defaults;
    ASSERT_TRUE(resolve_params(*op, {}, &defaults).ok());
    EXPECT_TRUE(op->kernels(defaults).empty()) << "the heuristic's kernel is the op's to pick";
    const auto configs = op->configs(defaults);
    ASSERT_FALSE(configs.empty());
    for (const auto& cfg : configs) {
      Params p;
      ASSERT_TRUE(resolve_params(*op, cfg, &p).ok());
      const auto specs = op->kernels(p);
      ASSERT_FALSE(specs.empty());
      if (std::string(name) == "gemv") {
        EXPECT_EQ(specs[0].header.rfind("nvfp4_gemv", 0), 0u) << specs[0].describe();
      } else {
        EXPECT_EQ(specs[0].header, "nvfp4_gemm.cuh");
        // nvfp4_gemm_kernel<half, BN, STAGES, SPLIT, ...>
        const std::string args =
            ", " + cfg.at("bn") + ", " + cfg.at("stages") + ", " + cfg.at("split") + ", ";
        EXPECT_NE(specs[0].entry.find(args), std::string::npos) << specs[0].entry;
        // A split compiles as a cluster and through L2 (the op may take
        // either); a K tail only through L2.
        const bool one = cfg.at("split") == "1" || cfg.at("tail") == "1";
        EXPECT_EQ(specs.size(), one ? 1u : 2u) << "cluster and L2 splits";
        // The last flags are K_TAIL (a tail compiles its own L2 meeting) and
        // the consumer warpgroups.
        const std::string last = (cfg.at("tail") == "1" ? "true, false, true, " : ", false, ") +
                                 cfg.at("consumers") + ">";
        EXPECT_EQ(specs[0].entry.substr(specs[0].entry.size() - last.size()), last)
            << specs[0].entry;
      }
    }
  }
}

}  // namespace
}  // namespace kestrel::bench
