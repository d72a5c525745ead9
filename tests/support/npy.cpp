#include "npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "reference/binary16.h"

namespace kestrel::testing {
namespace {

[[noreturn]] void fail(const std::string& name, const std::string& why) {
  throw std::runtime_error("npy: " + name + ": " + why);
}

size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  return i;
}

// Position just after "'key':" in the header dict, or npos.
size_t find_key(const std::string& h, const std::string& key) {
  const size_t at = h.find("'" + key + "'");
  if (at == std::string::npos) return at;
  const size_t colon = skip_space(h, at + key.size() + 2);
  if (colon >= h.size() || h[colon] != ':') return std::string::npos;
  return skip_space(h, colon + 1);
}

int descr_size(const std::string& d) {
  if (d == "<f8" || d == "<i8") return 8;
  if (d == "<f4") return 4;
  if (d == "<f2" || d == "<u2") return 2;
  if (d == "|u1") return 1;
  return 0;
}

// The dtypes a C++ element type may be read as; uint16_t also takes fp16 as raw bits.
template <typename T>
bool descr_fits(const std::string& d);
template <> bool descr_fits<double>(const std::string& d) { return d == "<f8"; }
template <> bool descr_fits<float>(const std::string& d) { return d == "<f4"; }
template <> bool descr_fits<uint8_t>(const std::string& d) { return d == "|u1"; }
template <> bool descr_fits<uint16_t>(const std::string& d) { return d == "<u2" || d == "<f2"; }
template <> bool descr_fits<int64_t>(const std::string& d) { return d == "<i8"; }

}  // namespace

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

int NpyArray::item_size() const { return descr_size(descr); }

template <typename T>
std::vector<T> NpyArray::as() const {
  if (!descr_fits<T>(descr)) throw std::runtime_error("npy: cannot read dtype " + descr + " as the requested C++ type");
  std::vector<T> out(static_cast<size_t>(numel()));
  if (!out.empty()) std::memcpy(out.data(), data.data(), out.size() * sizeof(T));  // little-endian host
  return out;
}
template std::vector<double> NpyArray::as<double>() const;
template std::vector<float> NpyArray::as<float>() const;
template std::vector<uint8_t> NpyArray::as<uint8_t>() const;
template std::vector<uint16_t> NpyArray::as<uint16_t>() const;
template std::vector<int64_t> NpyArray::as<int64_t>() const;

std::vector<double> NpyArray::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = data.data() + i * size_t(item_size());
    if (descr == "<f8") { double v; std::memcpy(&v, p, 8); out[i] = v; }
    else if (descr == "<f4") { float v; std::memcpy(&v, p, 4); out[i] = v; }
    else if (descr == "<f2") { uint16_t v; std::memcpy(&v, p, 2); out[i] = ref::fp16_value(v); }
    else if (descr == "<u2") { uint16_t v; std::memcpy(&v, p, 2); out[i] = v; }
    else if (descr == "<i8") { int64_t v; std::memcpy(&v, p, 8); out[i] = double(v); }
    else out[i] = p[0];
  }
  return out;
}

NpyArray parse_npy(const std::vector<uint8_t>& b, const std::string& name) {
  static const char kMagic[] = "\x93NUMPY";
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0) fail(name, "not a .npy file (bad magic)");
  const int major = b[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = size_t(b[8]) | size_t(b[9]) << 8;
    offset = 10;
  } else if (major == 2) {
    if (b.size() < 12) fail(name, "truncated header");
    header_len = size_t(b[8]) | size_t(b[9]) << 8 | size_t(b[10]) << 16 | size_t(b[11]) << 24;
    offset = 12;
  } else {
    fail(name, "unsupported format version " + std::to_string(major) + " (only 1 and 2)");
  }
  if (b.size() < offset + header_len) fail(name, "truncated header");
  const std::string h(b.begin() + long(offset), b.begin() + long(offset + header_len));

  NpyArray a;
  size_t i = find_key(h, "descr");
  if (i == std::string::npos || h[i] != '\'') fail(name, "header has no 'descr'");
  const size_t end = h.find('\'', i + 1);
  if (end == std::string::npos) fail(name, "malformed 'descr'");
  a.descr = h.substr(i + 1, end - i - 1);
  if (descr_size(a.descr) == 0)
    fail(name, "unsupported dtype '" + a.descr + "' (supported: <f8 <f4 <f2 |u1 <u2 <i8)");

  i = find_key(h, "fortran_order");
  if (i == std::string::npos) fail(name, "header has no 'fortran_order'");
  if (h.compare(i, 4, "True") == 0) fail(name, "Fortran-order arrays are not supported");
  if (h.compare(i, 5, "False") != 0) fail(name, "malformed 'fortran_order'");

  i = find_key(h, "shape");
  if (i == std::string::npos || h[i] != '(') fail(name, "header has no 'shape' tuple");
  for (++i;;) {
    i = skip_space(h, i);
    if (i >= h.size()) fail(name, "malformed 'shape'");
    if (h[i] == ')') break;
    size_t used = 0;
    long long dim;
    try {
      dim = std::stoll(h.substr(i), &used);
    } catch (const std::exception&) {
      fail(name, "malformed 'shape'");
    }
    if (dim < 0) fail(name, "negative dimension in 'shape'");
    a.shape.push_back(dim);
    i = skip_space(h, i + used);
    if (i < h.size() && h[i] == ',') ++i;
  }

  const size_t body = offset + header_len;
  const size_t want = size_t(a.numel()) * size_t(a.item_size());
  if (b.size() - body != want)
    fail(name, "data holds " + std::to_string(b.size() - body) + " bytes, shape needs " +
                   std::to_string(want));
  a.data.assign(b.begin() + long(body), b.end());
  return a;
}

NpyArray load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                   std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

}  // namespace kestrel::testing
