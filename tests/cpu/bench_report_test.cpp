// Markdown and JSON rendering of benchmark results, and per-family means.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "bench/report.h"

namespace kestrel::bench {
namespace {

ResultRow row(const std::string& op, const std::string& family, double us, double sol_fraction,
              std::vector<PeerResult> peers = {}) {
  ResultRow r;
  r.op = op;
  r.family = family;
  r.shape = "8192x8192 bf16 linear";
  r.time_us = us;
  r.tbps = 2.5;
  r.sol_fraction = sol_fraction;
  r.peers = std::move(peers);
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Cells of one markdown row, trimmed.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line.substr(1));
  for (std::string c; std::getline(in, c, '|');) {
    const size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
  }
  return out;
}

TEST(BenchReport, TableHasTheSpecifiedColumnsAndPeerPairs) {
  const auto text = markdown_table({row("quantize", "codec", 68.5, 0.837, {{"copy", 60.0, 0.876}}),
                                    row("gemm", "gemm", 12.25, 0.5, {{"cuBLAS bf16", 24.5, 2.0}})});
  const auto l = lines(text);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(cells(l[0]),
            (std::vector<std::string>{"op", "shape", "time µs", "TFLOP/s", "TB/s", "% SOL",
                                      "copy µs", "vs copy", "cuBLAS bf16 µs", "vs cuBLAS bf16"}));
  EXPECT_EQ(cells(l[2]),
            (std::vector<std::string>{"quantize", "8192x8192 bf16 linear", "68.50", "-", "2.50",
                                      "83.7%", "60.00", "0.88×", "", ""}));
  EXPECT_EQ(cells(l[3])[6], "");
  EXPECT_EQ(cells(l[3])[8], "24.50");
  EXPECT_EQ(cells(l[3])[9], "2.00×");
}

TEST(BenchReport, ColumnsAreAlignedAndNumbersRightAligned) {
  const auto l = lines(markdown_table(
      {row("quantize", "codec", 1234.5, 0.9), row("dequantize", "codec", 5.0, 0.25)}));
  // Every line has the same display width (µ is one column, two bytes).
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  for (const auto& x : l) EXPECT_EQ(width(x), width(l[0])) << x;
  EXPECT_NE(l[1].find("---:|"), std::string::npos);  // numeric columns right-aligned
  EXPECT_EQ(l[1].rfind("|:-", 0), 0u);               // op column left-aligned
  EXPECT_NE(l[3].find("|    5.00 |"), std::string::npos) << l[3];
}

TEST(BenchReport, SkippedAndFailedRowsAreVisible) {
  ResultRow skipped;
  skipped.op = "gemv";
  skipped.shape = "m=7168 k=16384 l=1";
  skipped.state = RowState::kSkipped;
  skipped.message = "skipped (not implemented)";
  ResultRow failed = skipped;
  failed.op = "quantize";
  failed.state = RowState::kFailed;
  failed.message = "cuda error: out of memory";
  const auto l = lines(markdown_table({skipped, failed}));
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(cells(l[2])[2], "skipped (not implemented)");
  EXPECT_EQ(cells(l[3])[2], "error: cuda error: out of memory");
  const auto j = report_json({skipped}, nlohmann::json::object());
  EXPECT_EQ(j["results"][0]["state"], "skipped");
  EXPECT_EQ(j["results"][0]["message"], "skipped (not implemented)");
  EXPECT_TRUE(j["summary"].empty());
}

TEST(BenchReport, CheckColumnOnlyWhenChecked) {
  ResultRow r = row("quantize", "codec", 10, 0.5);
  EXPECT_EQ(markdown_table({r}).find("check"), std::string::npos);
  r.check = "pass";
  EXPECT_NE(lines(markdown_table({r}))[0].find("check"), std::string::npos);
}

TEST(BenchReport, GeometricMeansPerFamily) {
  const auto fams = summarize_families({row("quantize", "codec", 10, 0.5, {{"copy", 20, 2.0}}),
                                        row("dequantize", "codec", 10, 0.8, {{"copy", 5, 0.5}}),
                                        row("gemm", "gemm", 10, 0.9, {{"cuBLAS bf16", 30, 3.0}})});
  ASSERT_EQ(fams.size(), 2u);
  EXPECT_EQ(fams[0].family, "codec");
  EXPECT_EQ(fams[0].cases, 2);
  EXPECT_NEAR(fams[0].geomean_sol_fraction, std::sqrt(0.5 * 0.8), 1e-12);
  ASSERT_EQ(fams[0].geomean_speedup.size(), 1u);
  EXPECT_NEAR(fams[0].geomean_speedup[0].speedup, 1.0, 1e-12);
  EXPECT_EQ(fams[1].family, "gemm");
  EXPECT_NEAR(fams[1].geomean_speedup[0].speedup, 3.0, 1e-12);
  const auto text = markdown_summary(fams);
  EXPECT_NE(text.find("63.2%"), std::string::npos) << text;  // sqrt(0.4)
  EXPECT_NE(text.find("geomean vs cuBLAS bf16"), std::string::npos);
}

TEST(BenchReport, JsonRowHasEveryField) {
  ResultRow r = row("quantize", "codec", 68.5, 0.837, {{"copy", 60.0, 0.876}});
  r.sol_us = 57.3;
  r.tflops = 0;
  const auto j = report_json({r}, {{"gpu", "H100"}});
  EXPECT_EQ(j["meta"]["gpu"], "H100");
  const auto& x = j["results"][0];
  for (const char* key : {"op", "shape", "time_us", "tflops", "tbps", "sol_us", "sol_fraction",
                          "peers", "min_us", "p10_us", "p90_us", "graph"})
    EXPECT_TRUE(x.contains(key)) << key;
  EXPECT_EQ(x["peers"][0]["name"], "copy");
  EXPECT_DOUBLE_EQ(x["peers"][0]["speedup"].get<double>(), 0.876);
  EXPECT_DOUBLE_EQ(j["summary"][0]["geomean_sol_fraction"].get<double>(), 0.837);
}

TEST(BenchReport, FormatFixed) {
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(1393.4, 0), "1393");
}

}  // namespace
}  // namespace kestrel::bench
