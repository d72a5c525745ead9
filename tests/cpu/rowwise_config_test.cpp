// The row-wise configuration space and heuristic (no GPU needed): every
// heuristic pick is a valid member of the space, for every op, dtype and the
// row lengths that matter (1 .. 262144, odd ones included).
#include "ops/rowwise_config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "kestrel/rowwise.h"

namespace kestrel {
namespace {

constexpr RowwiseOp kOps[] = {RowwiseOp::kRmsNormFwd,      RowwiseOp::kRmsNormBwd,
                              RowwiseOp::kSoftmaxFwd,      RowwiseOp::kSoftmaxBwd,
                              RowwiseOp::kCrossEntropyFwd, RowwiseOp::kCrossEntropyBwd};
constexpr int64_t kRowLengths[] = {1,     7,     256,   1000,   1024,   4096,   16384,
                                   32768, 50257, 65536, 131072, 131073, 151936, 262144};

bool same(const RowwiseConfig& a, const RowwiseConfig& b) {
  return a.threads == b.threads && a.threads_per_row == b.threads_per_row &&
         a.cluster == b.cluster && a.l2_group == b.l2_group &&
         a.rows_per_thread == b.rows_per_thread;
}

TEST(RowwiseConfig, HeuristicPicksAreValidMembersOfTheSpace) {
  for (RowwiseOp op : kOps)
    for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
      for (int64_t n : kRowLengths)
        for (int64_t m : {int64_t(1), int64_t(8), int64_t(32768)}) {
          const RowwiseConfig c = rowwise_default_config(op, m, n, t, 132);
          SCOPED_TRACE(std::string(rowwise_op_name(op)) + " " + dtype_name(t) +
                       " m=" + std::to_string(m) + " n=" + std::to_string(n) + " " + c.describe());
          EXPECT_EQ(ops::rowwise_config_error(op, c, n, t, 227 * 1024), "");
          const auto space = rowwise_config_space(op, n, t);
          EXPECT_TRUE(std::any_of(space.begin(), space.end(),
                                  [&](const RowwiseConfig& s) { return same(s, c); }));
          // Long rows on many rows keep about 8 (rmsnorm_bwd: 2..4) vectors
          // per thread, over all the rows it holds; softmax_bwd rows of up to
          // 2048 vectors 1..2 (the second pass rereads L2, or CTAs of 1024),
          // past 4096 vectors 3..4 (CTAs of 1024), rmsnorm_bwd rows of up to
          // 1024 vectors hold one.
          const int64_t per = ops::elements_per_vector(t), vectors = (n + per - 1) / per;
          const bool one_or_two = (op == RowwiseOp::kSoftmaxBwd && vectors <= 2048) ||
                                  (op == RowwiseOp::kRmsNormBwd && vectors <= 1024);
          int least = op == RowwiseOp::kRmsNormBwd ? 2 : 4;
          if (op == RowwiseOp::kSoftmaxBwd && vectors > 4096) least = 3;
          if (one_or_two) least = 1;
          if (m == 32768 && n >= 4096)
            EXPECT_GE(ops::vectors_per_thread(c, n, t) * c.rows_per_thread, least);
        }
}

TEST(RowwiseConfig, SoftmaxBackwardRereadsRowsOfOneVectorAThread) {
  const RowwiseConfig mid = rowwise_default_config(RowwiseOp::kSoftmaxBwd, 32768, 4096,
                                                   DType::kBF16, 132);
  EXPECT_EQ(ops::vectors_per_thread(mid, 4096, DType::kBF16), 1);
  EXPECT_TRUE(ops::rowwise_rereads(RowwiseOp::kSoftmaxBwd, mid, 1, false));
  // rmsnorm_bwd rereads only without a weight.
  EXPECT_TRUE(ops::rowwise_rereads(RowwiseOp::kRmsNormBwd, mid, 1, false));
  EXPECT_FALSE(ops::rowwise_rereads(RowwiseOp::kRmsNormBwd, mid, 1, true));
  EXPECT_GT(ops::rowwise_smem_bytes(RowwiseOp::kRmsNormBwd, mid, 1, DType::kBF16, true), 0u);
  EXPECT_EQ(ops::rowwise_smem_bytes(RowwiseOp::kSoftmaxBwd, mid, 1, DType::kBF16, false), 0u);
  const RowwiseConfig longer = rowwise_default_config(RowwiseOp::kSoftmaxBwd, 32768, 16384,
                                                      DType::kBF16, 132);
  EXPECT_EQ(longer.threads, 1024);
  EXPECT_EQ(ops::vectors_per_thread(longer, 16384, DType::kBF16), 2);
  EXPECT_GT(ops::rowwise_smem_bytes(RowwiseOp::kSoftmaxBwd, longer, 2, DType::kBF16, false), 0u);
}

// A configuration's CTA size and cluster, named on failure.
void expect_ctas(const RowwiseConfig& c, int threads, int cluster) {
  EXPECT_EQ(c.threads, threads) << c.describe();
  EXPECT_EQ(c.cluster, cluster) << c.describe();
}

TEST(RowwiseConfig, LongRowsUseClustersShortRowsShareCtas) {
  // 16-bit softmax_fwd: CTAs of 256 threads over 16, the most a cluster has.
  const RowwiseConfig bf16 =
      rowwise_default_config(RowwiseOp::kSoftmaxFwd, 8192, 262144, DType::kBF16, 132);
  expect_ctas(bf16, 256, 16);
  // fp32 softmax_fwd and rmsnorm_fwd: CTAs of 1024 threads at 8 vectors a
  // thread (session 23), on aligned rows only.
  const RowwiseConfig fp32 =
      rowwise_default_config(RowwiseOp::kSoftmaxFwd, 16384, 131072, DType::kF32, 132);
  expect_ctas(fp32, 1024, 4);
  const RowwiseConfig rms =
      rowwise_default_config(RowwiseOp::kRmsNormFwd, 32768, 32768, DType::kBF16, 132);
  expect_ctas(rms, 1024, 1);
  const RowwiseConfig odd = ops::default_config(RowwiseOp::kRmsNormFwd, 16384, 50257 + 7,
                                                DType::kBF16, 132, false, kRowShifted);
  EXPECT_EQ(odd.threads, 256) << odd.describe();
  const RowwiseConfig odd_bwd = ops::default_config(RowwiseOp::kSoftmaxBwd, 32768, 4097 + 3,
                                                    DType::kF32, 132, false, kRowShifted);
  expect_ctas(odd_bwd, 512, 1);  // shifted softmax_bwd of 1025..2048 vectors: not 1024
  // The fused residual holds two inputs: CTAs of 256 (no spills at 8 vectors).
  const RowwiseConfig res = ops::default_config(RowwiseOp::kRmsNormFwd, 8192, 262144,
                                                DType::kBF16, 132, true, kRowVector);
  EXPECT_EQ(res.threads, 256) << res.describe();
  // rmsnorm_bwd: long fp32 rows over L2 groups, 16-bit ones over clusters.
  const RowwiseConfig bwd32 =
      rowwise_default_config(RowwiseOp::kRmsNormBwd, 8192, 262144, DType::kF32, 132);
  EXPECT_TRUE(bwd32.l2_group && bwd32.cluster == 16) << bwd32.describe();
  const RowwiseConfig bwd16 =
      rowwise_default_config(RowwiseOp::kRmsNormBwd, 8192, 262144, DType::kBF16, 132);
  EXPECT_TRUE(!bwd16.l2_group && bwd16.cluster == 16) << bwd16.describe();
  // Rows of 4 CTAs' worth: 8 CTAs, two rows per thread.
  const RowwiseConfig bwd4 =
      rowwise_default_config(RowwiseOp::kRmsNormBwd, 16384, 65536, DType::kF32, 132);
  EXPECT_TRUE(bwd4.l2_group && bwd4.cluster == 8 && bwd4.rows_per_thread == 2) << bwd4.describe();
  // A row just past a power of two keeps 10 vectors per thread, not 5.
  const RowwiseConfig vocab =
      rowwise_default_config(RowwiseOp::kCrossEntropyFwd, 8192, 151936, DType::kBF16, 132);
  EXPECT_EQ(vocab.cluster, 8) << vocab.describe();
  EXPECT_EQ(ops::vectors_per_thread(vocab, 151936, DType::kBF16), 10);
  const RowwiseConfig short_rows =
      rowwise_default_config(RowwiseOp::kRmsNormFwd, 32768, 256, DType::kBF16, 132);
  EXPECT_EQ(short_rows.cluster, 1);
  EXPECT_GT(short_rows.threads / short_rows.threads_per_row, 1) << short_rows.describe();
  // ... in one-warp CTAs of 4 rows, two a thread (measured, session 19).
  EXPECT_EQ(short_rows.threads, 32) << short_rows.describe();
  EXPECT_EQ(short_rows.rows_per_thread, 2) << short_rows.describe();
  // softmax_bwd rows of 4096 vectors: one CTA of 512 threads (session 20).
  const RowwiseConfig softmax_bwd =
      rowwise_default_config(RowwiseOp::kSoftmaxBwd, 32768, 32768, DType::kBF16, 132);
  expect_ctas(softmax_bwd, 512, 1);
  // Longer: CTAs of 1024 threads at 4 vectors a thread (session 22).
  const RowwiseConfig softmax_bwd_long =
      rowwise_default_config(RowwiseOp::kSoftmaxBwd, 32768, 32768, DType::kF32, 132);
  expect_ctas(softmax_bwd_long, 1024, 2);
  // cross_entropy_bwd: 2 vectors a thread in CTAs of 128 threads (session 20).
  const RowwiseConfig xent_bwd =
      rowwise_default_config(RowwiseOp::kCrossEntropyBwd, 32768, 1024, DType::kBF16, 132);
  EXPECT_EQ(xent_bwd.threads, 128) << xent_bwd.describe();
  EXPECT_EQ(xent_bwd.threads_per_row, 64) << xent_bwd.describe();
  // A few long rows are spread over more CTAs to fill the GPU.
  const RowwiseConfig few =
      rowwise_default_config(RowwiseOp::kSoftmaxFwd, 2, 16384, DType::kBF16, 132);
  EXPECT_GT(few.cluster, 1) << few.describe();
}

TEST(RowwiseConfig, RulesNameWhatIsWrong) {
  const auto error = [](RowwiseOp op, RowwiseConfig c, int64_t n, DType t) {
    return ops::rowwise_config_error(op, c, n, t, 227 * 1024);
  };
  const auto err = [&](RowwiseConfig c, int64_t n = 4096) {
    return error(RowwiseOp::kSoftmaxFwd, c, n, DType::kBF16);
  };
  const auto bwd = [&](RowwiseConfig c, int64_t n, DType t = DType::kBF16) {
    return error(RowwiseOp::kRmsNormBwd, c, n, t);
  };
  EXPECT_NE(err({100, 32, 1}).find("threads must be"), std::string::npos);
  EXPECT_NE(err({16, 16, 1}).find("threads must be"), std::string::npos);
  EXPECT_TRUE(err({32, 32, 1}).empty()) << err({32, 32, 1});
  EXPECT_NE(bwd({64, 64, 1}, 4096).find("rmsnorm_bwd needs threads >= 128"), std::string::npos);
  EXPECT_NE(err({256, 48, 1}).find("threads_per_row"), std::string::npos);
  EXPECT_TRUE(err({64, 16, 1, false, 4}, 256).empty()) << err({64, 16, 1, false, 4}, 256);
  EXPECT_NE(err({64, 16, 1, false, 3}, 256).find("rows_per_thread must be"), std::string::npos);
  EXPECT_NE(err({128, 64, 1, false, 2}).find("threads_per_row <= 32"), std::string::npos);
  EXPECT_NE(err({32, 2, 1, false, 4}, 256).find("at most threads_per_row"), std::string::npos);
  EXPECT_NE(error(RowwiseOp::kSoftmaxBwd, {64, 16, 1, false, 2}, 256, DType::kBF16)
                .find("only rmsnorm_fwd, softmax_fwd and rmsnorm_bwd"),
            std::string::npos);
  // rmsnorm_bwd: rows per thread with clusters and whole-CTA rows, up to 4.
  EXPECT_TRUE(bwd({1024, 1024, 16, false, 2}, 262144).empty());
  EXPECT_NE(bwd({128, 16, 1, false, 8}, 256).find("at most 4"), std::string::npos);
  // Its staged rows count once per row a thread holds: 4 x 2 x 2 x 1024 x 16
  // bytes of bf16 rows and 32 KiB of dweight accumulators do not fit.
  EXPECT_NE(bwd({1024, 1024, 16, false, 4}, 262144).find("shared memory"), std::string::npos);
  EXPECT_NE(err({256, 512, 1}).find("threads_per_row"), std::string::npos);
  EXPECT_NE(err({256, 16, 2}).find("threads_per_row >= 32"), std::string::npos);
  EXPECT_NE(err({256, 32, 32}).find("cluster must be"), std::string::npos);
  EXPECT_NE(err({128, 1, 1}).find("vectors per thread"), std::string::npos);
  EXPECT_NE(bwd({1024, 1024, 1}, 262144, DType::kF32).find("vectors per thread"),
            std::string::npos);
  EXPECT_EQ(RowwiseConfig({256, 64, 2}).describe(), "t256 r64 c2");
  // L2 groups: rmsnorm_bwd only, and only for rows split over several CTAs.
  EXPECT_NE(err({256, 256, 2, true}).find("only rmsnorm_bwd"), std::string::npos);
  EXPECT_NE(bwd({1024, 1024, 1, true}, 4096, DType::kF32).find("cluster >= 2"), std::string::npos);
  EXPECT_EQ(bwd({1024, 1024, 16, true}, 262144, DType::kF32), "");
  EXPECT_EQ(RowwiseConfig({1024, 1024, 16, true}).describe(), "t1024 r1024 g16");
}

}  // namespace
}  // namespace kestrel
