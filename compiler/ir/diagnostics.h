#pragma once
// User-facing errors: every message a user can cause names the file, line, column and field.

#include <stdexcept>
#include <string>
#include <vector>

namespace stc {

/// A position in a source file; line and column count from 1, 0 means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0;

  /// "file:line:col", or as much of it as is known.
  std::string str() const;
};

/// A user error (bad file, bad flag, bad value): the message is complete and printed as it is.
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

/// Builds the canonical "file:line:col: error: message" text.
std::string formatError(const SourceLoc& loc, const std::string& message);

/// Throws a UserError at loc.
[[noreturn]] void fail(const SourceLoc& loc, const std::string& message);

/// Collects several errors so a check can report all of them at once.
class Diagnostics {
 public:
  void error(const SourceLoc& loc, const std::string& message) {
    messages_.push_back(formatError(loc, message));
  }
  bool empty() const { return messages_.empty(); }
  const std::vector<std::string>& messages() const { return messages_; }
  /// All messages, one per line.
  std::string str() const;
  /// Throws one UserError holding every message, if there are any.
  void throwIfAny() const;

 private:
  std::vector<std::string> messages_;
};

}  // namespace stc
