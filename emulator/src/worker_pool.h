// Host threads that run blocks, kept for the life of the process so their fiber stacks
// and shared-memory pools are made once, not per launch.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace emu::detail {

class WorkerPool {
 public:
  static WorkerPool& instance();
  ~WorkerPool();
  // Runs `job` on the calling thread and on `helpers` pool threads at once; returns
  // when every copy has returned. One run at a time (later callers wait).
  void run(int helpers, const std::function<void()>& job);

 private:
  void loop();
  std::mutex run_mutex_;  // serializes run()
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void()>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int wanted_ = 0, taken_ = 0, running_ = 0;
  bool stop_ = false;
};

}  // namespace emu::detail
