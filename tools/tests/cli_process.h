// Running a program as a user does, for the CLI tests: its exit code and what it printed,
// in a fresh temporary folder per test.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tools_test {

struct Result {
  int code = -1;
  std::string out, err;
};

// An empty folder named for the running test: `prefix` pid suite name.
inline std::filesystem::path temp_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path p =
      std::filesystem::temp_directory_path() /
      (prefix + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `program args` through the shell, stdout and stderr kept in `scratch`.
inline Result run_program(const std::string& program, const std::string& args,
                          const std::filesystem::path& scratch) {
  const std::filesystem::path o = scratch / "stdout.txt", e = scratch / "stderr.txt";
  const std::string cmd = program + " " + args + " >" + o.string() + " 2>" + e.string();
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  return r;
}

}  // namespace tools_test
