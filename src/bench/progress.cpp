#include "bench/progress.h"

#include <unistd.h>

#include <cstdio>

namespace kestrel::bench {

Progress::Progress(int total, bool enabled)
    : total_(total), enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

Progress::~Progress() {
  if (open_) std::fputc('\n', stderr);
}

void Progress::step(int index, const std::string& what) {
  if (!enabled_) return;
  current_ = "[" + std::to_string(index + 1) + "/" + std::to_string(total_) + "] " + what;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s ...", current_.c_str());
    open_ = true;
  }
  std::fflush(stderr);
}

void Progress::result(const std::string& text) {
  if (!enabled_) return;
  if (tty_)
    std::fprintf(stderr, "\r\033[K%s: %s", current_.c_str(), text.c_str());
  else
    std::fprintf(stderr, "%s: %s\n", current_.c_str(), text.c_str());
  std::fflush(stderr);
}

}  // namespace kestrel::bench
