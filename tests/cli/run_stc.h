#pragma once
// Runs stc as a user does, for the command-line tests: its exit code and what it printed.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace stc::test {

struct Outcome {
  int code;
  std::string out;  ///< stdout and stderr, interleaved
};

/// A shell command's exit code and output.
inline Outcome shell(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// stc with these arguments.
inline Outcome stc(const std::string& args) {
  return shell(std::string(STC_BINARY) + " " + args);
}

/// stc run in folder `dir`, paths relative to it as a user types them there.
inline Outcome stcIn(const std::string& dir, const std::string& args) {
  return shell("cd " + dir + " && " + std::string(STC_BINARY) + " " + args);
}

}  // namespace stc::test
