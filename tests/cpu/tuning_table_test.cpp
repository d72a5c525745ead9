// The tuning table (no GPU needed): its file format round-trips, bad files
// are refused with the entry and the rule named, and a call takes an entry
// only for its own GPU, op, rows and variant, with enough rows to fill the GPU.
#include "ops/tuning_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/rowwise_plan.h"
#include "runtime/embedded_sources.h"
#include "scoped_env.h"

namespace kestrel::ops {
namespace {

constexpr const char* kGpu = "NVIDIA H100 80GB HBM3";

RowwiseTuned entry(int64_t n, RowAccess access, const std::string& variant, RowwiseConfig c) {
  RowwiseTuned e;
  e.key = {kGpu, RowwiseOp::kCrossEntropyFwd, DType::kBF16, n, access, variant};
  e.config = c;
  e.us = 574.8;
  e.heuristic_us = 658.9;
  e.tuned_m = 16384;
  return e;
}

std::string one_entry_table(const std::string& fields) {
  return std::string(R"({"format": "kestrel-tuning-1", "rowwise": [{)") + fields + "}]}";
}
const std::string kGoodFields =
    R"("gpu": "G", "op": "cross_entropy_fwd", "dtype": "bf16", "n": 50257, "access": "shifted",
       "variant": "", "config": {"threads": 512, "tpr": 512, "cluster": 1})";

TEST(TuningTable, RoundTripsThroughItsFile) {
  TuningTable t;
  t.put(entry(50257, kRowShifted, "", {512, 512, 1}));
  t.put(entry(50256, kRowVector, "smoothing", {128, 128, 4}));
  TuningTable back;
  ASSERT_TRUE(TuningTable::parse(t.to_json(), "test", &back).ok());
  ASSERT_EQ(back.rowwise().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const RowwiseTuned &a = t.rowwise()[i], &b = back.rowwise()[i];
    EXPECT_TRUE(a.key == b.key);
    EXPECT_EQ(a.config.describe(), b.config.describe());
    EXPECT_DOUBLE_EQ(a.us, b.us);
    EXPECT_DOUBLE_EQ(a.heuristic_us, b.heuristic_us);
    EXPECT_EQ(a.tuned_m, b.tuned_m);
  }
}

TEST(TuningTable, PutReplacesTheEntryOfTheSameKey) {
  TuningTable t;
  t.put(entry(50257, kRowShifted, "", {512, 512, 1}));
  t.put(entry(50257, kRowShifted, "smoothing", {512, 512, 2}));
  t.put(entry(50257, kRowShifted, "", {256, 256, 4}));
  ASSERT_EQ(t.rowwise().size(), 2u);
  EXPECT_EQ(t.find(entry(50257, kRowShifted, "", {}).key)->config.describe(), "t256 r256 c4");
}

TEST(TuningTable, OptionalFieldsTakeTheirDefaults) {
  TuningTable t;
  ASSERT_TRUE(TuningTable::parse(one_entry_table(kGoodFields), "test", &t).ok());
  ASSERT_EQ(t.rowwise().size(), 1u);
  EXPECT_EQ(t.rowwise()[0].config.rows_per_thread, 1);
  EXPECT_FALSE(t.rowwise()[0].config.l2_group);
  EXPECT_TRUE(TuningTable::parse(R"({"format": "kestrel-tuning-1"})", "test", &t).ok());
  EXPECT_TRUE(t.rowwise().empty());
}

TEST(TuningTable, BadFilesAreRefusedWithTheRule) {
  // A table of one entry with these fields ("config" left out where empty).
  auto with = [](const std::string& op, const std::string& dtype, const std::string& n,
                 const std::string& access, const std::string& config) {
    return one_entry_table(R"("gpu": "G", "op": ")" + op + R"(", "dtype": ")" + dtype +
                           R"(", "n": )" + n + R"(, "access": ")" + access + "\"" +
                           (config.empty() ? "" : R"(, "config": )" + config));
  };
  const std::string cfg256 = R"({"threads": 256, "tpr": 256, "cluster": 1})";
  const std::pair<std::string, std::string> cases[] = {
      {"{not json", "not JSON"},
      {R"({"format": "other", "rowwise": []})", "\"format\" must be"},
      {R"({"format": "kestrel-tuning-1", "rowwise": {}})", "\"rowwise\" must be a list"},
      {with("gemm", "bf16", "8", "vector", cfg256), "entry 0: 'op': no row-wise op 'gemm'"},
      {with("softmax_fwd", "f64", "8", "vector", cfg256), "'dtype': must be f32, bf16 or f16"},
      {with("softmax_fwd", "bf16", "8", "sideways", cfg256),
       "'access': must be vector, shifted or elementwise"},
      {with("softmax_fwd", "bf16", "0", "vector", cfg256), "'n': must be in [1, 262144]"},
      {with("softmax_fwd", "bf16", "4096", "vector", R"({"threads": 48, "tpr": 16, "cluster": 1})"),
       "threads must be 32, 64, 128, 256, 512 or 1024"},
      // 262144 bf16 elements in one CTA of 32 threads: too many vectors a thread.
      {with("softmax_fwd", "bf16", "262144", "vector",
            R"({"threads": 32, "tpr": 32, "cluster": 1})"),
       "vectors per thread"},
      {with("softmax_fwd", "bf16", "4096", "vector", ""), "entry 0:"},
  };
  for (const auto& [text, rule] : cases) {
    TuningTable t;
    const Status s = TuningTable::parse(text, "'t.json'", &t);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find("tuning table 't.json'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
  }
}

TEST(TuningTable, ACallTakesOnlyItsOwnEntryWithRowsToFillTheGpu) {
  TuningTable t;
  t.put(entry(50257, kRowShifted, "", {512, 512, 1}));  // one row a CTA
  const RowwiseTuningKey key = entry(50257, kRowShifted, "", {}).key;
  const RowwiseConfig* c = tuned_rowwise_config(t, key, 16384, 132);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->describe(), "t512 r512 c1");
  EXPECT_NE(tuned_rowwise_config(t, key, 132, 132), nullptr);
  // Fewer rows than SMs: the heuristic spreads them over more CTAs.
  EXPECT_EQ(tuned_rowwise_config(t, key, 131, 132), nullptr);
  // Any other key: another GPU, op, dtype, row length, access or variant.
  std::vector<RowwiseTuningKey> others(6, key);
  others[0].gpu = "NVIDIA H200";
  others[1].op = RowwiseOp::kCrossEntropyBwd;
  others[2].dtype = DType::kF16;
  others[3].n = 50256;
  others[4].access = kRowElementwise;
  others[5].variant = "smoothing";
  for (size_t i = 0; i < others.size(); ++i)
    EXPECT_EQ(tuned_rowwise_config(t, others[i], 16384, 132), nullptr) << i;
}

GemmTuned gemm_entry(int64_t m, GemmConfig c) {
  GemmTuned e;
  e.key = {kGpu, true, m, 3072, 7168, 1, true, false};
  e.config = c;
  e.us = 66.9;
  e.heuristic_us = 67.4;
  return e;
}

TEST(TuningTable, GemmEntriesRoundTripAndServeTheirExactShape) {
  TuningTable t;
  t.put(gemm_entry(512, {256, 3, 1, false, true}));
  t.put(gemm_entry(256, {128, 4, 2, true, false}));
  t.put(gemm_entry(512, {256, 2, 1, false, true}));  // replaces the first
  t.put(gemm_entry(384, {96, 4, 1, false, false, 3}));
  TuningTable back;
  const Status s = TuningTable::parse(t.to_json(), "test", &back);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(back.gemm().size(), 3u);
  EXPECT_EQ(back.gemm()[2].config.describe(), "bn96 s4 k1 c3");
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(back.gemm()[i].key == t.gemm()[i].key);
    EXPECT_EQ(back.gemm()[i].config.describe(), t.gemm()[i].config.describe());
    EXPECT_DOUBLE_EQ(back.gemm()[i].us, 66.9);
  }
  EXPECT_EQ(back.find(gemm_entry(512, {}).key)->config.describe(), "bn256 s2 k1 tail");
  GemmTuningKey other = gemm_entry(512, {}).key;
  other.m = 511;
  EXPECT_EQ(back.find(other), nullptr);
  other = gemm_entry(512, {}).key;
  other.dual = false;
  EXPECT_EQ(back.find(other), nullptr);
  other = gemm_entry(512, {}).key;
  other.w_packed = false;
  EXPECT_EQ(back.find(other), nullptr);
}

TEST(TuningTable, BadGemmEntriesAreRefusedWithTheRule) {
  auto with = [](const std::string& fields, const std::string& config) {
    return R"({"format": "kestrel-tuning-1", "gemm": [{"gpu": "G", )" + fields + R"(, "config": )" +
           config + "}]}";
  };
  const std::string shape = R"("op": "gemm", "m": 128, "n": 7168, "k": 16384)";
  const std::string cfg = R"({"bn": 128, "stages": 4, "split": 2})";
  const std::pair<std::string, std::string> cases[] = {
      {with(R"("op": "gemv", "m": 1, "n": 8, "k": 64)", cfg), "gemm entry 0: 'op': must be gemm"},
      {with(R"("op": "gemm", "m": 1, "n": 8, "k": 96)", cfg), "'k' a multiple of 64"},
      {with(R"("op": "gemm", "m": 0, "n": 8, "k": 64)", cfg), "must be >= 1"},
      {with(shape + R"(, "w_layout": "tiled")", cfg), "'w_layout': must be linear or blocked"},
      {with(shape + R"(, "packed": true, "w_layout": "blocked")", cfg), "packed weights carry"},
      {with(shape, R"({"bn": 100, "stages": 4, "split": 2})"), "block_n must be one of"},
      {with(shape, R"({"bn": 128, "stages": 4, "split": 3})"), "split_k 1/2/4/8"},
      {with(shape, R"({"bn": 256, "stages": 8, "split": 1})"), "bytes of shared memory"},
      {with(shape, R"({"bn": 128})"), "gemm entry 0:"},
      {with(shape, R"({"bn": 128, "stages": 4, "split": 1, "consumers": 4})"),
       "consumer_groups must be 2 or 3"},
      {with(shape, R"({"bn": 128, "stages": 4, "split": 1, "consumers": 3})"),
       "consumer_groups 3 needs the dual GEMM"},
      {with(R"("op": "dual_gemm", "m": 512, "n": 3072, "k": 7168)",
            R"({"bn": 256, "stages": 2, "split": 1, "consumers": 3})"),
       "block_n <= 128"},
  };
  for (const auto& [text, rule] : cases) {
    TuningTable t;
    const Status s = TuningTable::parse(text, "'t.json'", &t);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
  }
}

TEST(TuningTable, VariantNamesTheOptionsInAFixedOrder) {
  EXPECT_EQ(RowVariant{}.tuning_variant(), "");
  RowVariant v{true, true, DType::kBF16};
  EXPECT_EQ(v.tuning_variant(), "residual+weight");
  RowVariant s;
  s.smoothing = true;
  EXPECT_EQ(s.tuning_variant(), "smoothing");
}

// Each shipped table (tuning/*.json, embedded) parses, holds one entry per
// key, and was tuned on rows of its entries' own length.
TEST(TuningTable, TheShippedTablesParseWithOneEntryPerKey) {
  ASSERT_FALSE(rt::embedded_tuning_tables().empty());
  size_t entries = 0;
  for (const rt::EmbeddedSource& f : rt::embedded_tuning_tables()) {
    SCOPED_TRACE(f.path);
    const nlohmann::json doc = nlohmann::json::parse(f.text);
    TuningTable t;
    const Status s = TuningTable::parse(f.text, f.path, &t);
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(t.rowwise().size(), doc.at("rowwise").size()) << "two entries of one key";
    EXPECT_EQ(t.gemm().size(), doc.at("gemm").size()) << "two entries of one key";
    for (const RowwiseTuned& e : t.rowwise()) EXPECT_GT(e.tuned_m, 0) << e.key.n;
    entries += t.rowwise().size() + t.gemm().size();
  }
  const TuningTable* shipped = nullptr;
  ASSERT_TRUE(shipped_tuning_table(&shipped).ok());
  EXPECT_EQ(shipped->rowwise().size() + shipped->gemm().size(), entries);
}

// The tests that read $KESTREL_TUNING_TABLE (each file read once per process).
TEST(TuningTable, TheActiveTableIsTheShippedOnesUnderTheFileTheEnvironmentNames) {
  const TuningTable* shipped = nullptr;
  ASSERT_TRUE(shipped_tuning_table(&shipped).ok());
  ASSERT_FALSE(shipped->rowwise().empty());
  const TuningTable* active = nullptr;
  {
    const testing::ScopedEnv unset("KESTREL_TUNING_TABLE", nullptr);
    ASSERT_TRUE(active_tuning_table(&active).ok());
    EXPECT_EQ(active, shipped);
    EXPECT_EQ(active_tuning_table_source(), "the shipped tables");
  }
  {
    const testing::ScopedEnv none("KESTREL_TUNING_TABLE", kNoTuningTables);
    ASSERT_TRUE(active_tuning_table(&active).ok());
    EXPECT_TRUE(active->rowwise().empty() && active->gemm().empty());
    EXPECT_EQ(active_tuning_table_source(), "no table (KESTREL_TUNING_TABLE=none)");
  }
  // A file entry of a shipped key replaces it; one of a new key joins them.
  RowwiseTuned over = shipped->rowwise().front();
  over.config.cluster = over.config.cluster == 16 ? 8 : 16;
  TuningTable file;
  file.put(over);
  file.put(entry(777, kRowVector, "", {128, 128, 1}));
  const std::string path = ::testing::TempDir() + "kestrel_tuning_table_test.json";
  std::ofstream(path) << file.to_json();
  const testing::ScopedEnv env("KESTREL_TUNING_TABLE", path.c_str());
  ASSERT_TRUE(active_tuning_table(&active).ok());
  EXPECT_EQ(active->rowwise().size(), shipped->rowwise().size() + 1);
  ASSERT_NE(active->find(over.key), nullptr);
  EXPECT_EQ(active->find(over.key)->config.describe(), over.config.describe());
  EXPECT_NE(active->find(file.rowwise().back().key), nullptr);
  EXPECT_EQ(active_tuning_table_source(), "the shipped tables under '" + path + "'");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kestrel::ops
