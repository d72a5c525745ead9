// A progress line on stderr for long suites, so that stdout stays the report.
// On a terminal the line is rewritten in place; otherwise one line per step.
#pragma once
#include <string>

namespace kestrel::bench {

class Progress {
 public:
  Progress(int total, bool enabled);
  ~Progress();  // ends an in-place line
  // Announces step `index` (0-based) of `total`.
  void step(int index, const std::string& what);
  // The result of the step just announced (time, "skipped", an error, ...).
  void result(const std::string& text);

 private:
  int total_;
  bool enabled_, tty_;
  bool open_ = false;  // a rewritten line is on screen
  std::string current_;
};

}  // namespace kestrel::bench
