// The terminal progress line of `pagedattn report`: stage, case i of n, elapsed seconds.
// Drawn on stderr only when stderr is a terminal; otherwise silent.
#pragma once
#include <chrono>
#include <string>

namespace pagedattn::report {

class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress();
  void stage(const std::string& name, long total);
  void step(long done);  // cases finished in this stage
  void done();           // ends the line

 private:
  void draw();
  bool enabled_;
  std::string stage_;
  long total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

}  // namespace pagedattn::report
