#include "progress.h"

#include <cstdio>

namespace pagedattn::report {

Progress::Progress(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  done();
}

void Progress::stage(const std::string& name, long total) {
  stage_ = name;
  total_ = total;
  done_ = 0;
  draw();
}

void Progress::step(long done) {
  done_ = done;
  draw();
}

void Progress::draw() {
  if (!enabled_) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (total_ > 0)
    std::fprintf(stderr, "\r\033[Kreport: %s, case %ld of %ld, %.0f s", stage_.c_str(), done_,
                 total_, s);
  else
    std::fprintf(stderr, "\r\033[Kreport: %s, %.0f s", stage_.c_str(), s);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::done() {
  if (enabled_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace pagedattn::report
