#include "golden.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace kestrel::testing {
namespace {

#ifndef KESTREL_GOLDEN_DIR
#define KESTREL_GOLDEN_DIR ""
#endif

// case.json "kind" -> the .npy dtype it must be stored as.
const char* descr_of_kind(const std::string& kind) {
  static const std::map<std::string, const char*> kinds = {
      {"float64", "<f8"},   {"float32", "<f4"},   {"float16", "<f2"},  {"int64", "<i8"},
      {"uint8", "|u1"},     {"e4m3_bits", "|u1"}, {"bf16_bits", "<u2"},
  };
  const auto it = kinds.find(kind);
  return it == kinds.end() ? nullptr : it->second;
}

}  // namespace

std::string golden_dir() {
  const char* env = std::getenv("KESTREL_GOLDEN_DIR");
  return (env && *env) ? std::string(env) : std::string(KESTREL_GOLDEN_DIR);
}

bool golden_available() {
  std::error_code ec;
  const std::string dir = golden_dir();
  return !dir.empty() && std::filesystem::is_directory(dir, ec);
}

GoldenCase GoldenCase::load(const std::string& name) {
  GoldenCase c;
  c.name_ = name;
  c.dir_ = golden_dir() + "/" + name;
  const std::string path = c.dir_ + "/case.json";
  std::ifstream f(path);
  if (!f) throw std::runtime_error("golden: cannot open " + path);
  try {
    c.json_ = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("golden: " + path + ": " + e.what());
  }
  return c;
}

const nlohmann::json& GoldenCase::entry(const std::string& key) const {
  if (!json_.contains(key)) throw std::runtime_error("golden: " + name_ + " has no '" + key + "'");
  return json_.at(key);
}

double GoldenCase::scalar(const std::string& key) const {
  const auto& j = entry(key);
  if (!j.is_number()) throw std::runtime_error("golden: " + name_ + "." + key + " is not a number");
  return j.get<double>();
}

int64_t GoldenCase::integer(const std::string& key) const {
  const auto& j = entry(key);
  if (!j.is_number_integer())
    throw std::runtime_error("golden: " + name_ + "." + key + " is not an integer");
  return j.get<int64_t>();
}

std::vector<int64_t> GoldenCase::integers(const std::string& key) const {
  const auto& j = entry(key);
  if (!j.is_array()) throw std::runtime_error("golden: " + name_ + "." + key + " is not a list");
  return j.get<std::vector<int64_t>>();
}

std::string GoldenCase::text(const std::string& key) const {
  const auto& j = entry(key);
  if (!j.is_string()) throw std::runtime_error("golden: " + name_ + "." + key + " is not a string");
  return j.get<std::string>();
}

std::vector<int64_t> GoldenCase::shape(const std::string& key) const {
  return entry(key).at("shape").get<std::vector<int64_t>>();
}

NpyArray GoldenCase::tensor(const std::string& key) const {
  const auto& j = entry(key);
  if (!j.is_object() || !j.contains("file") || !j.contains("kind"))
    throw std::runtime_error("golden: " + name_ + "." + key + " is not a tensor entry");
  const std::string kind = j.at("kind").get<std::string>();
  const char* want = descr_of_kind(kind);
  if (!want) throw std::runtime_error("golden: " + name_ + "." + key + ": unknown kind " + kind);
  NpyArray a = load_npy(dir_ + "/" + j.at("file").get<std::string>());
  if (a.descr != want)
    throw std::runtime_error("golden: " + name_ + "." + key + ": kind " + kind +
                             " stored as dtype " + a.descr);
  if (a.shape != shape(key))
    throw std::runtime_error("golden: " + name_ + "." + key + ": .npy shape differs from case.json");
  return a;
}

std::vector<double> GoldenCase::doubles(const std::string& key) const {
  const NpyArray a = tensor(key);
  if (a.descr == "|u1" || a.descr == "<u2")
    throw std::runtime_error("golden: " + name_ + "." + key + " holds bit patterns, not numbers");
  return a.to_doubles();
}

std::vector<uint8_t> GoldenCase::bytes(const std::string& key) const {
  return tensor(key).as<uint8_t>();
}
std::vector<uint16_t> GoldenCase::bits16(const std::string& key) const {
  return tensor(key).as<uint16_t>();
}
std::vector<int64_t> GoldenCase::int64s(const std::string& key) const {
  return tensor(key).as<int64_t>();
}

}  // namespace kestrel::testing
