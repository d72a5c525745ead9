// Suite files and op parameters: every suite in bench/suites parses, names
// known ops with valid parameters, and the seeds suite holds every seed shape.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "bench/op_registry.h"
#include "bench/search_space.h"
#include "bench/suite.h"

namespace kestrel::bench {
namespace {

std::vector<std::string> suite_files() { return list_suite_files(default_suite_dir()); }

TEST(BenchSuites, EverySuiteFileParsesAndNamesKnownOps) {
  const auto files = suite_files();
  ASSERT_FALSE(files.empty()) << "no suites in " << default_suite_dir();
  for (const auto& path : files) {
    Suite s;
    const Status loaded = load_suite(path, &s);
    ASSERT_TRUE(loaded.ok()) << loaded.to_string();
    EXPECT_FALSE(s.cases.empty()) << path;
    const Status valid = validate_suite(s, builtin_registry());
    EXPECT_TRUE(valid.ok()) << valid.to_string();
  }
}

TEST(BenchSuites, SeedsAndQuantizeSuitesExist) {
  std::string path;
  EXPECT_TRUE(find_suite("seeds", default_suite_dir(), &path).ok());
  EXPECT_TRUE(find_suite("quantize", default_suite_dir(), &path).ok());
  EXPECT_EQ(find_suite("no_such_suite", default_suite_dir(), &path).code(), StatusCode::kNotFound);
}

// Cases as "op m=.. n=.." strings, to compare suites by content.
std::set<std::string> case_keys(const Suite& s) {
  std::set<std::string> keys;
  for (const auto& c : s.cases) keys.insert(c.op + " " + describe_params(c.params));
  return keys;
}

TEST(BenchSuites, SeedsSuiteHoldsEverySeedShape) {
  std::ifstream f(KESTREL_GOLDEN_DIR "/../workloads/seeds.json");
  if (!f) GTEST_SKIP() << "shared/workloads/seeds.json not present";
  const nlohmann::json seeds = nlohmann::json::parse(f);
  Suite suite;
  std::string path;
  ASSERT_TRUE(find_suite("seeds", default_suite_dir(), &path).ok());
  ASSERT_TRUE(load_suite(path, &suite).ok());
  const auto have = case_keys(suite);
  auto expect = [&](const std::string& op, const nlohmann::json& params) {
    Suite one;
    const nlohmann::json j = {{"cases", {{{"op", op}, {"params", params}}}}};
    ASSERT_TRUE(parse_suite(j, &one).ok());
    const std::string key = *case_keys(one).begin();
    EXPECT_TRUE(have.count(key)) << "seeds suite lacks " << key;
  };
  for (const auto& s : seeds["gemv_nvfp4"]) expect("gemv", s);
  for (const auto& s : seeds["gemm_nvfp4"]) expect("gemm", s);
  for (const auto& s : seeds["dual_gemm_nvfp4"]) expect("dual_gemm", s);
  for (const auto& s : seeds["grouped_gemm_nvfp4"]) expect("grouped_gemm", s);
  for (const auto& s : seeds["gemm_fp8_add"]) expect("fp8_gemm_add", s);
  for (const char* family : {"rmsnorm", "softmax", "cross_entropy"})
    for (const char* dir : {"_fwd", "_bwd"})
      for (const auto& dtype : seeds[family]["dtypes"])
        for (const auto& shape : seeds[family]["shapes"])
          expect(std::string(family) + dir, {{"m", shape[0]}, {"n", shape[1]}, {"dtype", dtype}});
  for (const char* op : {"quantize", "dequantize"})
    for (const char* layout : {"linear", "blocked"})
      expect(op, {{"m", 8192}, {"k", 8192}, {"dtype", "bf16"}, {"layout", layout}});
}

TEST(BenchSuites, LabelsKeepTheFilesKeyOrder) {
  const char* text = R"({"cases": [{"op": "gemv", "params": {"m": 7168, "k": 16384, "l": 1}}]})";
  Suite s;
  ASSERT_TRUE(parse_suite(nlohmann::ordered_json::parse(text), &s).ok());
  EXPECT_EQ(s.cases[0].label, "m=7168 k=16384 l=1");
  ASSERT_TRUE(parse_suite(nlohmann::json::parse(text), &s).ok());
  EXPECT_EQ(s.cases[0].label, "k=16384 l=1 m=7168");  // plain json sorts its keys
}

TEST(BenchSuites, ParsingTurnsValuesIntoParameterText) {
  Suite s;
  const auto j = nlohmann::json::parse(R"({"name": "t", "cases": [
      {"op": "grouped_gemm", "params": {"m": [80, 176], "n": 4096, "name": "deep_k"}},
      {"op": "quantize", "params": {"global_scale": 0.5, "dtype": "fp32"}},
      {"op": "convert_scales"}]})");
  ASSERT_TRUE(parse_suite(j, &s).ok());
  ASSERT_EQ(s.cases.size(), 3u);
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.cases[0].params.at("m"), "80,176");
  EXPECT_EQ(s.cases[0].params.at("n"), "4096");
  EXPECT_EQ(s.cases[0].params.at("name"), "deep_k");
  EXPECT_EQ(s.cases[1].params.at("global_scale"), "0.5");
  EXPECT_TRUE(s.cases[2].params.empty());
}

TEST(BenchSuites, MalformedSuitesAreRejected) {
  Suite s;
  EXPECT_FALSE(parse_suite(nlohmann::json::array(), &s).ok());
  EXPECT_FALSE(parse_suite(nlohmann::json{{"name", "x"}}, &s).ok());
  EXPECT_FALSE(parse_suite(nlohmann::json::parse(R"({"cases": [{"params": {}}]})"), &s).ok());
  EXPECT_FALSE(
      parse_suite(nlohmann::json::parse(R"({"cases": [{"op": "gemv", "params": {"m": {}}}]})"), &s)
          .ok());
  EXPECT_FALSE(
      parse_suite(nlohmann::json::parse(R"({"cases": [{"op": "gemv", "params": {"m": [1.5]}}]})"),
                  &s)
          .ok());
}

TEST(BenchSuites, ValidationCatchesUnknownOpsAndBadParameters) {
  Suite s;
  s.name = "t";
  s.cases = {{"gemv", {{"m", "7168"}}, ""}};  // planned: fine, skipped when run
  EXPECT_TRUE(validate_suite(s, builtin_registry()).ok());
  s.cases = {{"gemmv", {}, ""}};
  EXPECT_EQ(validate_suite(s, builtin_registry()).code(), StatusCode::kNotFound);
  s.cases = {{"quantize", {{"layout", "tiled"}}, ""}};
  EXPECT_EQ(validate_suite(s, builtin_registry()).code(), StatusCode::kInvalidArgument);
}

TEST(BenchOps, PlannedOpsSayNotImplemented) {
  const OpInfo* op = nullptr;
  for (const char* name :
       {"gemv", "gemm", "dual_gemm", "grouped_gemm", "fp8_gemm_add", "rmsnorm_fwd", "rmsnorm_bwd",
        "softmax_fwd", "softmax_bwd", "cross_entropy_fwd", "cross_entropy_bwd"}) {
    if (builtin_registry().find(name)) continue;  // implemented since
    const Status s = lookup_op(builtin_registry(), name, &op);
    EXPECT_EQ(s.code(), StatusCode::kUnsupported);
    EXPECT_EQ(s.message(), std::string("op '") + name + "' is not implemented yet");
  }
  EXPECT_EQ(lookup_op(builtin_registry(), "frobnicate", &op).code(), StatusCode::kNotFound);
}

// The GEMV's ring switch takes 0 or 1 only; anything else is named before
// any data or GPU is touched.
TEST(BenchOps, GemvRingSwitchNamesABadValue) {
  const OpInfo* op = nullptr;
  ASSERT_TRUE(lookup_op(builtin_registry(), "gemv", &op).ok());
  Params p;
  ASSERT_TRUE(resolve_params(*op, {{"m", "64"}, {"k", "256"}, {"ring", "2"}}, &p).ok());
  CheckReport rep;
  const Status st = op->check(p, OpEnv{}, &rep);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("ring: must be 0"), std::string::npos) << st.message();
}

// `kestrel tune` on a row-wise op searches that op's configuration space at
// the given n and dtype: every configuration is a valid parameter set, and
// only rmsnorm_bwd's include L2 groups.
TEST(BenchOps, RowwiseTuneSpacesFollowTheShape) {
  for (const char* name : {"rmsnorm_fwd", "rmsnorm_bwd", "softmax_fwd", "softmax_bwd",
                           "cross_entropy_fwd", "cross_entropy_bwd"}) {
    const OpInfo* op = nullptr;
    ASSERT_TRUE(lookup_op(builtin_registry(), name, &op).ok()) << name;
    ASSERT_TRUE(op->configs) << name;
    Params shape;
    ASSERT_TRUE(
        resolve_params(*op, {{"m", "8192"}, {"n", "262144"}, {"dtype", "fp32"}}, &shape).ok());
    const auto long_rows = op->configs(shape);
    ASSERT_TRUE(resolve_params(*op, {{"m", "8192"}, {"n", "256"}, {"dtype", "fp32"}}, &shape).ok());
    const auto short_rows = op->configs(shape);
    EXPECT_FALSE(long_rows.empty()) << name;
    EXPECT_FALSE(short_rows.empty()) << name;
    EXPECT_NE(long_rows, short_rows) << name;
    bool l2 = false;
    for (const auto& cfg : long_rows) {
      std::map<std::string, std::string> values = {{"n", "262144"}, {"dtype", "fp32"}};
      values.insert(cfg.begin(), cfg.end());
      Params p;
      EXPECT_TRUE(resolve_params(*op, values, &p).ok()) << name;
      l2 = l2 || (cfg.count("l2_group") && cfg.at("l2_group") == "1");
    }
    EXPECT_EQ(l2, std::string(name) == "rmsnorm_bwd") << name;
  }
}

TEST(BenchOps, CodecOpsAreRegisteredWithTheirParameters) {
  for (const char* name : {"quantize", "dequantize", "convert_scales"}) {
    const OpInfo* op = nullptr;
    ASSERT_TRUE(lookup_op(builtin_registry(), name, &op).ok()) << name;
    EXPECT_TRUE(op->check && op->bench);
    Params p;
    ASSERT_TRUE(resolve_params(*op, {}, &p).ok()) << name << ": defaults must be valid";
    EXPECT_EQ(p.integer("m"), 8192);
    EXPECT_EQ(p.integer("l"), 1);
  }
}

TEST(BenchOps, ResolveParamsFillsDefaultsAndNamesTheBrokenRule) {
  const OpInfo* op = builtin_registry().find("quantize");
  ASSERT_NE(op, nullptr);
  Params p;
  ASSERT_TRUE(resolve_params(*op, {{"m", "128"}, {"global_scale", "2.5e-3"}}, &p).ok());
  EXPECT_EQ(p.integer("m"), 128);
  EXPECT_DOUBLE_EQ(p.real("global_scale"), 2.5e-3);
  EXPECT_EQ(p.text("dtype"), "bf16");

  Status s = resolve_params(*op, {{"m", "12x"}}, &p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("m: must be an integer"), std::string::npos) << s.message();
  s = resolve_params(*op, {{"dtype", "fp8"}}, &p);
  EXPECT_NE(s.message().find("dtype: must be one of bf16|fp16|fp32"), std::string::npos);
  s = resolve_params(*op, {{"n", "5"}}, &p);
  EXPECT_NE(s.message().find("unknown parameter 'n'"), std::string::npos);
  s = resolve_params(*op, {{"global_scale", "inf"}}, &p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(BenchOps, DescribeParamsFollowsTheOpsOrder) {
  const OpInfo* op = builtin_registry().find("quantize");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(describe_params({{"k", "64"}, {"m", "2"}}, op), "m=2 k=64");
  EXPECT_EQ(describe_params({{"k", "64"}, {"m", "2"}}), "k=64 m=2");
}

// `kestrel tune gemm --bn 128 --tail 1` searches only the configurations
// with those values, timed against the heuristic's pick (bn and tail back at
// 0); a pin no configuration keeps is an error naming it.
TEST(BenchOps, GivenConfigurationParametersNarrowTheSearch) {
  const OpInfo* op = nullptr;
  ASSERT_TRUE(lookup_op(builtin_registry(), "gemm", &op).ok());
  Params defaults;
  ASSERT_TRUE(resolve_params(*op, {}, &defaults).ok());
  std::map<std::string, std::string> values = defaults.values();
  SearchSpace all;
  ASSERT_TRUE(search_space(*op, values, &all).ok());
  EXPECT_TRUE(all.pinned.empty());
  EXPECT_EQ(all.heuristic, values);

  values["bn"] = "128";
  values["tail"] = "1";
  SearchSpace some;
  ASSERT_TRUE(search_space(*op, values, &some).ok());
  EXPECT_EQ(some.pinned, (std::map<std::string, std::string>{{"bn", "128"}, {"tail", "1"}}));
  EXPECT_EQ(some.heuristic, defaults.values());
  size_t expected = 0;
  for (const auto& cfg : all.configs) expected += cfg.at("bn") == "128" && cfg.at("tail") == "1";
  EXPECT_GT(expected, 0u);
  EXPECT_EQ(some.configs.size(), expected);
  for (const auto& cfg : some.configs) {
    EXPECT_EQ(cfg.at("bn"), "128");
    EXPECT_EQ(cfg.at("tail"), "1");
  }

  // Splits without a tail are searched over a cluster and through L2.
  values["tail"] = "0";
  values["split_l2"] = "1";
  SearchSpace l2;
  ASSERT_TRUE(search_space(*op, values, &l2).ok());
  EXPECT_FALSE(l2.configs.empty());
  for (const auto& cfg : l2.configs) EXPECT_NE(cfg.at("split"), "1");

  values["bn"] = "100";
  SearchSpace none;
  const Status s = search_space(*op, values, &none);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--bn 100"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kestrel::bench
