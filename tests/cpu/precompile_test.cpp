// Compiling ahead for `kestrel tune`: each distinct kernel once, in parallel,
// into the disk cache that the launches read.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "bench/precompile.h"
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

}  // namespace
}  // namespace kestrel::bench
