// Every kernel's default configurations compile for Hopper with NVRTC; needs
// no GPU, so CI catches kernel compile errors.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <set>
#include <string>

#include "ops/kernel_catalog.h"
#include "runtime/compiler.h"
#include "scoped_env.h"

namespace kestrel {
namespace {

// ptxas's report of a fresh compile: spill bytes per function, and C7514
// when it serializes a kernel's wgmmas (it compiles, and runs slower: a
// wgmma issue peeled out of the GEMM's loop did it in session 14).
bool reports_spills(const std::string& log) {
  for (size_t at = log.find(" bytes spill stores"); at != std::string::npos;
       at = log.find(" bytes spill stores", at + 1))
    if (at == 0 || log[at - 1] != '0' || (at >= 2 && std::isdigit(log[at - 2]))) return true;
  return false;
}

TEST(NvrtcCompile, EveryDefaultKernelCompilesForSm90a) {
  const auto specs = ops::default_kernel_specs();
  ASSERT_FALSE(specs.empty());
  // Fresh compiles (the cache keeps no log), with ptxas's resource report.
  const testing::ScopedEnv no_cache("KESTREL_CACHE_DIR", "off");
  const testing::ScopedEnv verbose("KESTREL_PTXAS_VERBOSE", "1");
  // Where a GPU driver is installed, NVRTC 13.0 hands back an earlier
  // identical program's cubin with an empty log (H100 machine, session 35):
  // a header's non-template kernels (xent_finish_kernel, xent_count_kernel)
  // are one program. Its first compile's report covered every kernel in it.
  std::set<std::string> reported;
  for (const auto& spec : specs) {
    rt::CompiledKernel out;
    const Status st = rt::compile_kernel(spec, "sm_90a", &out);
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_GT(out.cubin.size(), 100u) << spec.describe();
    EXPECT_FALSE(out.lowered_name.empty()) << spec.describe();
    ASSERT_FALSE(out.from_cache) << spec.describe();
    if (out.log.empty() && reported.count(out.cubin)) continue;
    reported.insert(out.cubin);
    EXPECT_NE(out.log.find("bytes spill stores"), std::string::npos)
        << spec.describe() << ": no ptxas resource report in the log:\n"
        << out.log;
    EXPECT_FALSE(reports_spills(out.log)) << spec.describe() << " spills:\n" << out.log;
    EXPECT_EQ(out.log.find("C7514"), std::string::npos)
        << spec.describe() << ": ptxas serialized the wgmmas:\n"
        << out.log;
  }
}

TEST(NvrtcCompile, EveryTunableConfigurationCompilesForSm90a) {
  const auto specs = ops::configuration_space_specs();
  ASSERT_GT(specs.size(), 50u);
  for (const auto& spec : specs) {
    rt::CompiledKernel out;
    const Status st = rt::compile_kernel(spec, "sm_90a", &out);
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
}

// Each list compiles a kernel once: a run-time parameter (a raster, a tail
// split) in a configuration space must not repeat its kernel there.
TEST(NvrtcCompile, NoKernelIsListedTwice) {
  for (const auto& specs : {ops::default_kernel_specs(), ops::configuration_space_specs()}) {
    std::set<std::string> seen;
    for (const auto& spec : specs) {
      std::string key = spec.describe();
      for (const std::string& o : spec.options) key += " " + o;
      EXPECT_TRUE(seen.insert(key).second) << key << " is listed twice";
    }
  }
}

TEST(NvrtcCompile, CompileErrorCarriesTheLog) {
  rt::CompiledKernel out;
  const Status st =
      rt::compile_kernel({"nvfp4_quantize.cuh", "kestrel::no_such_kernel<1>", {}}, "sm_90a", &out);
  EXPECT_EQ(st.code(), StatusCode::kCompileError);
  EXPECT_NE(st.message().find("no_such_kernel"), std::string::npos) << st.message();
}

TEST(NvrtcCompile, UnknownHeaderIsNotFound) {
  rt::CompiledKernel out;
  const Status st = rt::compile_kernel({"missing.cuh", "f", {}}, "sm_90a", &out);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kestrel
