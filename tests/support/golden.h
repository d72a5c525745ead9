// Golden vectors: cases computed independently in float64 (PyTorch), one
// folder per case under the golden directory, described by case.json.
// The directory is the compile definition KESTREL_GOLDEN_DIR, overridden at
// run time by the environment variable of the same name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "npy.h"

namespace kestrel::testing {

std::string golden_dir();
// Whether golden_dir() is an existing directory. Tests skip (never pass) when not.
bool golden_available();

class GoldenCase {
 public:
  // Reads <golden_dir>/<name>/case.json; throws std::runtime_error if absent.
  static GoldenCase load(const std::string& name);

  const std::string& name() const { return name_; }
  const nlohmann::json& json() const { return json_; }
  bool has(const std::string& key) const { return json_.contains(key); }

  double scalar(const std::string& key) const;   // a JSON number
  int64_t integer(const std::string& key) const;  // a JSON integer
  std::vector<int64_t> integers(const std::string& key) const;  // a JSON list of integers
  std::string text(const std::string& key) const;

  // The tensor named `key`: loaded from its .npy, with the dtype checked
  // against the case's "kind" and the shape against its "shape".
  NpyArray tensor(const std::string& key) const;
  std::vector<int64_t> shape(const std::string& key) const;
  std::vector<double> doubles(const std::string& key) const;  // float64/32/16, int64 kinds
  std::vector<uint8_t> bytes(const std::string& key) const;   // uint8, e4m3_bits kinds
  std::vector<uint16_t> bits16(const std::string& key) const; // bf16_bits, float16 kinds
  std::vector<int64_t> int64s(const std::string& key) const;  // int64 kind

 private:
  std::string name_, dir_;
  nlohmann::json json_;
  const nlohmann::json& entry(const std::string& key) const;
};

}  // namespace kestrel::testing
