// Every kernel's default configurations compile for Hopper with NVRTC; needs
// no GPU, so CI catches kernel compile errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ops/kernel_catalog.h"
#include "runtime/compiler.h"

namespace kestrel {
namespace {

TEST(NvrtcCompile, EveryDefaultKernelCompilesForSm90a) {
  const auto specs = ops::default_kernel_specs();
  ASSERT_FALSE(specs.empty());
  for (const auto& spec : specs) {
    rt::CompiledKernel out;
    const Status st = rt::compile_kernel(spec, "sm_90a", &out);
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_GT(out.cubin.size(), 100u) << spec.describe();
    EXPECT_FALSE(out.lowered_name.empty()) << spec.describe();
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
