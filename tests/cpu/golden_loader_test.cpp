// The .npy reader and golden-case loader, on files written here: supported
// headers load, everything else fails with a clear message; the golden
// directory follows KESTREL_GOLDEN_DIR.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "golden.h"
#include "npy.h"
#include "scoped_env.h"

namespace kestrel::testing {
namespace {

// A .npy image with the given header dict and payload.
std::vector<uint8_t> npy_image(const std::string& dict, const std::vector<uint8_t>& payload,
                               int version = 1) {
  std::string h = dict;
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(version), 0};
  const size_t n = h.size();
  out.push_back(uint8_t(n & 0xff));
  out.push_back(uint8_t(n >> 8));
  if (version == 2) {
    out.push_back(uint8_t(n >> 16));
    out.push_back(uint8_t(n >> 24));
  }
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::string error_of(const std::vector<uint8_t>& img) {
  try {
    parse_npy(img, "t.npy");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, ReadsVersion1And2) {
  const std::vector<double> d = {1.5, -2.0, 3.25, 0.0, 5.0, 6.0};
  for (int version : {1, 2}) {
    const auto a = parse_npy(
        npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", raw(d), version),
        "t.npy");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(a.as<double>(), d);
    EXPECT_EQ(a.to_doubles(), d);
  }
}

TEST(Npy, ReadsEveryListedDtype) {
  const auto i64 = parse_npy(npy_image("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                       raw(std::vector<int64_t>{-100, 7})),
                             "t");
  EXPECT_EQ(i64.as<int64_t>(), (std::vector<int64_t>{-100, 7}));
  const auto f2 = parse_npy(npy_image("{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }",
                                      raw(std::vector<uint16_t>{0x3e00})),
                            "t");
  EXPECT_EQ(f2.to_doubles(), (std::vector<double>{1.5}));
  EXPECT_EQ(f2.as<uint16_t>(), (std::vector<uint16_t>{0x3e00}));
  const auto f4 = parse_npy(npy_image("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                      raw(std::vector<float>{0.25f})),
                            "t");
  EXPECT_TRUE(f4.shape.empty());
  EXPECT_EQ(f4.as<float>(), (std::vector<float>{0.25f}));
  const auto u1 = parse_npy(npy_image("{'descr': '|u1', 'fortran_order': False, 'shape': (0, 4), }",
                                      {}),
                            "t");
  EXPECT_EQ(u1.numel(), 0);
  const auto u2 = parse_npy(npy_image("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }",
                                      raw(std::vector<uint16_t>{0xbeef})),
                            "t");
  EXPECT_EQ(u2.as<uint16_t>(), (std::vector<uint16_t>{0xbeef}));
  EXPECT_THROW(u2.as<double>(), std::runtime_error);
}

TEST(Npy, RejectsWhatItCannotReadWithAClearMessage) {
  const auto f8 = raw(std::vector<double>{1.0, 2.0});
  EXPECT_NE(error_of(npy_image("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", f8))
                .find("unsupported dtype '>f8'"),
            std::string::npos);
  EXPECT_NE(error_of(npy_image("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", f8))
                .find("unsupported dtype"),
            std::string::npos);
  EXPECT_NE(error_of(npy_image("{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", f8))
                .find("Fortran"),
            std::string::npos);
  EXPECT_NE(error_of(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", f8))
                .find("shape needs 24"),
            std::string::npos);
  EXPECT_NE(error_of(npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", f8, 3))
                .find("version 3"),
            std::string::npos);
  EXPECT_NE(error_of({'n', 'o', 't', 'n', 'p', 'y', 1, 0, 0, 0}).find("bad magic"),
            std::string::npos);
  EXPECT_THROW(load_npy("/nonexistent/x.npy"), std::runtime_error);
}

TEST(Golden, DirectoryFollowsTheEnvironment) {
  ScopedEnv env("KESTREL_GOLDEN_DIR", "/nonexistent/golden");
  EXPECT_EQ(golden_dir(), "/nonexistent/golden");
  EXPECT_FALSE(golden_available());
  EXPECT_THROW(GoldenCase::load("codec_e4m3"), std::runtime_error);
}

TEST(Golden, LoadsACaseAndChecksKindsAndShapes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kestrel_golden_" + std::to_string(getpid()));
  fs::create_directories(dir / "case");
  {
    std::ofstream(dir / "case" / "case.json")
        << R"({"M": 3, "eps": 0.5, "Ms": [1, 0], "note": "hi",
               "x": {"file": "x.npy", "kind": "float64", "shape": [2]},
               "bad_kind": {"file": "x.npy", "kind": "bf16_bits", "shape": [2]},
               "bad_shape": {"file": "x.npy", "kind": "float64", "shape": [3]}})";
    const auto img = npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                               raw(std::vector<double>{1.0, 2.0}));
    std::ofstream(dir / "case" / "x.npy", std::ios::binary)
        .write(reinterpret_cast<const char*>(img.data()), std::streamsize(img.size()));
  }
  ScopedEnv env("KESTREL_GOLDEN_DIR", dir.string());
  EXPECT_TRUE(golden_available());
  const auto c = GoldenCase::load("case");
  EXPECT_EQ(c.integer("M"), 3);
  EXPECT_EQ(c.scalar("eps"), 0.5);
  EXPECT_EQ(c.integers("Ms"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(c.text("note"), "hi");
  EXPECT_EQ(c.doubles("x"), (std::vector<double>{1.0, 2.0}));
  EXPECT_THROW(c.tensor("bad_kind"), std::runtime_error);
  EXPECT_THROW(c.tensor("bad_shape"), std::runtime_error);
  EXPECT_THROW(c.scalar("missing"), std::runtime_error);
  EXPECT_THROW(c.integer("eps"), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kestrel::testing
