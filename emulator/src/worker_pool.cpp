#include "worker_pool.h"

namespace emu::detail {

WorkerPool& WorkerPool::instance() {
  static WorkerPool pool;
  return pool;
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::loop() {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (generation_ != seen && taken_ < wanted_); });
    if (stop_) return;
    ++taken_;
    seen = generation_;
    const std::function<void()>* job = job_;
    lock.unlock();
    (*job)();
    lock.lock();
    if (--running_ == 0) done_.notify_all();
  }
}

void WorkerPool::run(int helpers, const std::function<void()>& job) {
  std::lock_guard<std::mutex> serial(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(threads_.size()) < helpers) threads_.emplace_back([this] { loop(); });
    job_ = &job;
    wanted_ = helpers;
    taken_ = 0;
    running_ = helpers;
    ++generation_;
  }
  wake_.notify_all();
  job();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

}  // namespace emu::detail
