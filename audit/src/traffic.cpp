#include "pagedattn_audit/traffic.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

extern char** environ;

namespace pagedattn::audit {
namespace {

// All of a descriptor's bytes, to its end.
std::string drain(int fd) {
  std::string s;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      s.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fd);
  return s;
}

std::vector<std::string> helper_args(const TrafficQuery& q) {
  std::string lens;
  for (int n : q.seq_lens) lens += (lens.empty() ? "" : ",") + std::to_string(n);
  std::vector<std::string> a = {traffic_helper_path(),
                                "--profile",
                                q.profile,
                                "--dtype",
                                q.dtype,
                                "--kv-cache-dtype",
                                q.kv_cache_dtype,
                                "--num-heads",
                                std::to_string(q.num_heads),
                                "--num-kv-heads",
                                std::to_string(q.num_kv_heads),
                                "--head-size",
                                std::to_string(q.head_size),
                                "--block-size",
                                std::to_string(q.block_size),
                                "--partition-size",
                                std::to_string(q.partition_size),
                                "--seq-lens",
                                lens,
                                "--kernel",
                                q.kernel,
                                "--variant",
                                q.variant};
  std::string choices;
  if (q.choices.partials_in_output_dtype) choices += ",partials";
  if (q.choices.epsilon_denominator) choices += ",epsilon";
  if (q.choices.round_probabilities) choices += ",round_p";
  if (!choices.empty()) a.insert(a.end(), {"--vllm-choices", choices.substr(1)});
  if (q.alibi) a.push_back("--alibi");
  return a;
}

// Runs argv[0] with stdout and stderr captured; returns the exit status.
int run_captured(const std::vector<std::string>& args, std::string& out, std::string& err) {
  int out_pipe[2], err_pipe[2];
  if (::pipe(out_pipe) != 0) throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  if (::pipe(err_pipe) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("pipe: " + std::string(strerror(errno)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    posix_spawn_file_actions_addclose(&fa, fd);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error(args[0] + ": cannot run (" + strerror(rc) + ")");
  }
  // The helper writes stderr only when it fails, after which it writes no stdout: reading
  // stdout to its end first cannot leave it blocked on a full stderr pipe.
  out = drain(out_pipe[0]);
  err = drain(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string TrafficRun::absent_reason() const {
  if (status != "ok") return "not launched (" + status + "): " + reason;
  if (launches.empty()) return "no launch ran";
  for (const LaunchBytes& l : launches) {
    if (!l.instrumented)
      return l.kernel +
             " has no instrumented copy in this build (emulator/tests/CMakeLists.txt, "
             "kernels_race_instrumented: grouped kernels for f16 only)";
  }
  return "";
}

std::uint64_t TrafficRun::bytes_read() const {
  std::uint64_t n = 0;
  for (const LaunchBytes& l : launches) n += l.bytes_read;
  return n;
}
std::uint64_t TrafficRun::bytes_written() const {
  std::uint64_t n = 0;
  for (const LaunchBytes& l : launches) n += l.bytes_written;
  return n;
}
std::uint64_t TrafficRun::kv_bytes_read() const {
  std::uint64_t n = 0;
  for (const LaunchBytes& l : launches) n += l.kv_bytes_read;
  return n;
}

std::string traffic_helper_path() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "pagedattn-traffic";
  return (self.parent_path() / "pagedattn-traffic").string();
}

void require_traffic_helper() {
  const std::string path = traffic_helper_path();
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error(
        path +
        " not found: counting bytes needs the race-instrumented kernels, built into "
        "pagedattn-traffic beside pagedattn where the tests are built without a sanitizer "
        "(cmake -DPAGEDATTN_TESTS=ON, target pagedattn_traffic)");
  }
}

Traffic measure_traffic(const TrafficQuery& q) {
  require_traffic_helper();
  const std::vector<std::string> args = helper_args(q);
  std::string out, err;
  const int code = run_captured(args, out, err);
  if (code != 0) {
    throw std::runtime_error(args[0] + " failed (exit " + std::to_string(code) + "): " + err);
  }
  Traffic t;
  try {
    const nlohmann::json j = nlohmann::json::parse(out);
    t.kv_bytes_exist = j.at("kv_bytes_exist").get<std::uint64_t>();
    t.query_bytes = j.at("query_bytes").get<std::uint64_t>();
    t.block_table_bytes = j.at("block_table_bytes").get<std::uint64_t>();
    for (const nlohmann::json& r : j.at("runs")) {
      TrafficRun run;
      run.kernel = r.at("kernel").get<std::string>();
      run.variant = r.at("variant").get<std::string>();
      run.status = r.at("status").get<std::string>();
      run.reason = r.at("reason").get<std::string>();
      if (!r.at("grouped_fallback").is_null())
        run.grouped_fallback = r.at("grouped_fallback").get<std::string>();
      for (const nlohmann::json& l : r.at("launches")) {
        LaunchBytes b;
        b.kernel = l.at("kernel").get<std::string>();
        b.role = l.at("role").get<std::string>();
        b.instrumented = l.at("instrumented").get<bool>();
        b.bytes_read = l.at("bytes_read").get<std::uint64_t>();
        b.bytes_written = l.at("bytes_written").get<std::uint64_t>();
        b.kv_bytes_read = l.at("kv_bytes_read").get<std::uint64_t>();
        run.launches.push_back(std::move(b));
      }
      t.runs.push_back(std::move(run));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(args[0] + ": unreadable output (" + e.what() + ")");
  }
  return t;
}

}  // namespace pagedattn::audit
