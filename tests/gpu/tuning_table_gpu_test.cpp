// The tuning table on the GPU: a call given no configuration takes the
// table's entry for this GPU and its rows (and only those), the result
// matches the float64 reference, and a table that cannot be read fails the
// call with the reason instead of being ignored.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>

#include "gpu_test.h"
#include "kestrel/rowwise.h"
#include "ops/rowwise_plan.h"
#include "ops/tuning_table.h"
#include "random.h"
#include "reference/reference.h"
#include "rowwise_data.h"
#include "runtime/device.h"
#include "scoped_env.h"

namespace kestrel {
namespace {

using testing::DeviceBuffer;
using testing::DeviceRows;
using testing::Rows;

constexpr int64_t kM = 4096, kN = 1000;
// Not the heuristic's pick for bf16 rows of 1000 (t64 r16 c1).
const RowwiseConfig kTuned{128, 128, 1};

// A table with one cross_entropy_fwd entry for `gpu`, smoothed bf16 rows of
// kN. One file per GPU name: each file is read once per process.
std::string write_table(const std::string& gpu) {
  ops::TuningTable t;
  ops::RowwiseTuned e;
  e.key = {gpu, RowwiseOp::kCrossEntropyFwd, DType::kBF16, kN, kRowVector, "smoothing"};
  e.config = kTuned;
  t.put(e);
  std::string file = gpu;
  for (char& c : file)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  const std::string path = ::testing::TempDir() + "kestrel_tuning_gpu_test_" + file + ".json";
  std::ofstream(path) << t.to_json();
  return path;
}

RowwiseConfig planned(bool smoothing) {
  ops::RowVariant v;
  v.smoothing = smoothing;
  ops::RowPlan plan;
  const Status s = ops::plan_rows(RowwiseOp::kCrossEntropyFwd, kM, kN, DType::kBF16, nullptr,
                                  kRowVector, &plan, v);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return plan.cfg;
}

// cross_entropy_fwd (reduction none) on m fresh bf16 rows of n logits, row
// stride n, against the float64 reference; outputs poisoned first.
void expect_xent_fwd_matches_reference(int64_t m, int64_t n, float smoothing) {
  const Rows logits(DType::kBF16, m, n, 0, testing::random_normal(m * n, 31, 2.0));
  const auto target = testing::random_targets(m, n, 32, -100, 5);
  const DeviceRows dl = DeviceRows::input(logits);
  const DeviceBuffer dt = DeviceBuffer::from(target);
  const DeviceBuffer loss = testing::poisoned_f32(m), lse = testing::poisoned_f32(m);
  CrossEntropyOptions opt;
  opt.label_smoothing = smoothing;
  opt.reduction = Reduction::kNone;
  const Status s = cross_entropy_fwd(dl.view, TensorView::dense(dt.get(), DType::kI64, {m}),
                                     TensorView::dense(loss.get(), DType::kF32, {m}),
                                     TensorView::dense(lse.get(), DType::kF32, {m}), nullptr, opt);
  ASSERT_TRUE(s.ok()) << s.to_string();
  const auto want = ref::cross_entropy_fwd(logits.values.data(), target.data(), m, n, -100,
                                           smoothing, ref::Reduction::kNone);
  const auto lse_report = testing::compare_fp32(testing::read_f32(lse), want.lse, 1e-5, m);
  EXPECT_TRUE(lse_report.pass) << lse_report.to_string();
  const auto loss_report = testing::compare_fp32(testing::read_f32(loss), want.loss, 1e-5, m);
  EXPECT_TRUE(loss_report.pass) << loss_report.to_string();
}

TEST(TuningTableGpu, CallsTakeTheirEntryAndMatchTheReference) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  const std::string path = write_table(dev->name);
  const testing::ScopedEnv env("KESTREL_TUNING_TABLE", path);
  EXPECT_EQ(planned(true).describe(), kTuned.describe());
  EXPECT_NE(planned(false).describe(), kTuned.describe());  // another variant: the heuristic's

  expect_xent_fwd_matches_reference(kM, kN, 0.1f);
  std::remove(path.c_str());
}

TEST(TuningTableGpu, AnotherGpusEntriesAreNotTaken) {
  KESTREL_REQUIRE_GPU();
  const std::string path = write_table("some other GPU");
  const testing::ScopedEnv env("KESTREL_TUNING_TABLE", path);
  EXPECT_NE(planned(true).describe(), kTuned.describe());
  std::remove(path.c_str());
}

TEST(TuningTableGpu, AnUnreadableTableFailsTheCallWithTheReason) {
  KESTREL_REQUIRE_GPU();
  const testing::ScopedEnv env("KESTREL_TUNING_TABLE", "/nonexistent/kestrel_table.json");
  ops::RowPlan plan;
  const Status s =
      ops::plan_rows(RowwiseOp::kSoftmaxFwd, kM, kN, DType::kBF16, nullptr, kRowVector, &plan);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("KESTREL_TUNING_TABLE: cannot read '/nonexistent/"), std::string::npos)
      << s.to_string();
  // A configuration given by the caller needs no table.
  EXPECT_TRUE(
      ops::plan_rows(RowwiseOp::kSoftmaxFwd, kM, kN, DType::kBF16, &kTuned, kRowVector, &plan)
          .ok());
}

// Every shipped entry for this GPU is what a call of its row length plans,
// at the rows it was tuned on and at the fewest that fill the GPU with it;
// cross_entropy_fwd's entries also run there against the float64 reference.
TEST(TuningTableGpu, ShippedEntriesArePlannedAndMatchTheReference) {
  KESTREL_REQUIRE_GPU();
  const rt::DeviceInfo* dev = nullptr;
  ASSERT_TRUE(rt::current_device(&dev).ok());
  const testing::ScopedEnv unset("KESTREL_TUNING_TABLE", nullptr);
  const ops::TuningTable* shipped = nullptr;
  ASSERT_TRUE(ops::shipped_tuning_table(&shipped).ok());
  int entries = 0;
  for (const ops::RowwiseTuned& e : shipped->rowwise()) {
    if (e.key.gpu != dev->name) continue;
    SCOPED_TRACE(std::string(rowwise_op_name(e.key.op)) + " n=" + std::to_string(e.key.n) + " " +
                 e.key.variant);
    ops::RowVariant v;
    v.residual = e.key.variant.find("residual") != std::string::npos;
    v.weight = e.key.variant.find("weight") != std::string::npos;
    v.smoothing = e.key.variant.find("smoothing") != std::string::npos;
    ASSERT_EQ(v.tuning_variant(), e.key.variant);
    const int64_t fill_m =
        (dev->sm_count + e.config.cluster - 1) / e.config.cluster * e.config.rows_per_cta();
    for (int64_t m : {e.tuned_m, fill_m}) {
      ops::RowPlan plan;
      const Status s =
          ops::plan_rows(e.key.op, m, e.key.n, e.key.dtype, nullptr, e.key.access, &plan, v);
      ASSERT_TRUE(s.ok()) << s.to_string();
      EXPECT_EQ(plan.cfg.describe(), e.config.describe()) << m << " rows";
      EXPECT_EQ(plan.access, e.key.access) << m << " rows";
    }
    // Dense rows of n: shifted where 16-byte vectors do not divide them.
    const bool dense_rows_match =
        (e.key.n * dtype_size(e.key.dtype) % 16 == 0) == (e.key.access == kRowVector);
    if (e.key.op == RowwiseOp::kCrossEntropyFwd && e.key.dtype == DType::kBF16 && dense_rows_match)
      expect_xent_fwd_matches_reference(fill_m, e.key.n, v.smoothing ? 0.1f : 0.0f);
    ++entries;
  }
  if (entries == 0) GTEST_SKIP() << "no shipped tuning entries for " << dev->name;
}

}  // namespace
}  // namespace kestrel
