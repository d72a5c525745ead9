#include "runtime/compiler.h"

#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "runtime/embedded_sources.h"

namespace kestrel::rt {
namespace {

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // Separator so that ("ab","c") and ("a","bc") differ.
  h ^= 0xff;
  h *= 1099511628211ull;
  return h;
}

// Every embedded header takes part in every key: a kernel's includes are not
// tracked, and a changed common header must never load a stale cubin.
uint64_t sources_hash() {
  static const uint64_t h = [] {
    uint64_t v = 14695981039346656037ull;
    for (const auto& src : embedded_sources()) v = fnv1a(fnv1a(v, src.path), src.text);
    return v;
  }();
  return h;
}

std::string cuda_include_dir() {
  if (const char* env = std::getenv("KESTREL_CUDA_INCLUDE_DIR")) return env;
  if (const char* home = std::getenv("CUDA_HOME")) return std::string(home) + "/include";
  return KESTREL_CUDA_INCLUDE_DIR;
}

std::vector<std::string> nvrtc_options(const KernelSpec& spec, const std::string& arch) {
  std::vector<std::string> opts = {
      "--gpu-architecture=" + arch, "-std=c++17", "-default-device", "-lineinfo",
      "--device-as-default-execution-space", "-I" + cuda_include_dir(),
      "-I" + cuda_include_dir() + "/cccl", "-DKESTREL_NVRTC=1"};
  if (std::getenv("KESTREL_PTXAS_VERBOSE")) opts.push_back("-Xptxas=-v");
  opts.insert(opts.end(), spec.options.begin(), spec.options.end());
  return opts;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return bool(f) || f.eof();
}

// Write-then-rename, so that concurrent processes never see a partial file.
void write_file_atomic(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return;
    f.write(data.data(), std::streamsize(data.size()));
    if (!f) return;
  }
  std::rename(tmp.c_str(), path.c_str());
}

void make_dirs(const std::string& path) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    ::mkdir(path.substr(0, pos).c_str(), 0755);
  }
}

#define NVRTC_RETURN(expr)                                                              \
  do {                                                                                  \
    nvrtcResult r_ = (expr);                                                            \
    if (r_ != NVRTC_SUCCESS)                                                            \
      return Status::CompileError(std::string(#expr) + ": " + nvrtcGetErrorString(r_)); \
  } while (0)

Status nvrtc_compile(const KernelSpec& spec, const std::string& arch, CompiledKernel* out) {
  const auto& sources = embedded_sources();
  std::vector<const char*> header_texts, header_names;
  bool found = false;
  for (const auto& src : sources) {
    header_texts.push_back(src.text.c_str());
    header_names.push_back(src.path);
    found = found || spec.header == src.path;
  }
  if (!found) return Status::NotFound("kernel header '" + spec.header + "' is not embedded");
  const std::string unit = "#include \"" + spec.header + "\"\n";

  nvrtcProgram prog;
  NVRTC_RETURN(nvrtcCreateProgram(&prog, unit.c_str(), "kestrel_unit.cu", int(sources.size()),
                                  header_texts.data(), header_names.data()));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &prog, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
  NVRTC_RETURN(nvrtcAddNameExpression(prog, spec.entry.c_str()));

  const auto opts = nvrtc_options(spec, arch);
  std::vector<const char*> copts;
  for (const auto& o : opts) copts.push_back(o.c_str());
  const nvrtcResult res = nvrtcCompileProgram(prog, int(copts.size()), copts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) nvrtcGetProgramLog(prog, log.data());
  if (res != NVRTC_SUCCESS)
    return Status::CompileError(spec.describe() + " for " + arch + ": " +
                                nvrtcGetErrorString(res) + "\n" + log);

  const char* lowered = nullptr;
  NVRTC_RETURN(nvrtcGetLoweredName(prog, spec.entry.c_str(), &lowered));
  out->lowered_name = lowered;
  out->log = log_size > 1 ? log.substr(0, log_size - 1) : std::string();
  size_t cubin_size = 0;
  NVRTC_RETURN(nvrtcGetCUBINSize(prog, &cubin_size));
  out->cubin.assign(cubin_size, '\0');
  NVRTC_RETURN(nvrtcGetCUBIN(prog, out->cubin.data()));
  out->from_cache = false;
  return Status::Ok();
}

}  // namespace

std::string kernel_cache_dir() {
  if (const char* env = std::getenv("KESTREL_CACHE_DIR")) {
    return std::string(env) == "off" ? std::string() : std::string(env);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return std::string(xdg) + "/kestrel";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/kestrel";
  return "/tmp/kestrel-cache";
}

Status compile_kernel(const KernelSpec& spec, const std::string& arch, CompiledKernel* out) {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  uint64_t key = sources_hash();
  key = fnv1a(key, spec.header);
  key = fnv1a(key, spec.entry);
  for (const auto& o : nvrtc_options(spec, arch)) key = fnv1a(key, o);
  key = fnv1a(key, std::to_string(major) + "." + std::to_string(minor));

  const std::string dir = kernel_cache_dir();
  const std::string base = dir.empty() ? std::string() : dir + "/" + hex64(key);
  if (!base.empty() && read_file(base + ".cubin", &out->cubin) &&
      read_file(base + ".name", &out->lowered_name) && !out->cubin.empty()) {
    out->from_cache = true;
    return Status::Ok();
  }
  KESTREL_RETURN_IF_ERROR(nvrtc_compile(spec, arch, out));
  if (!base.empty()) {
    make_dirs(dir);
    write_file_atomic(base + ".name", out->lowered_name);
    write_file_atomic(base + ".cubin", out->cubin);
  }
  return Status::Ok();
}

}  // namespace kestrel::rt
