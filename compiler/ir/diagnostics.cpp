// Error formatting shared by every stage: "file:line:col: error: message".
#include "compiler/ir/diagnostics.h"

namespace stc {

std::string SourceLoc::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

std::string formatError(const SourceLoc& loc, const std::string& message) {
  return loc.str() + ": error: " + message;
}

void fail(const SourceLoc& loc, const std::string& message) { throw UserError(formatError(loc, message)); }

std::string Diagnostics::str() const {
  std::string out;
  for (const auto& m : messages_) {
    if (!out.empty()) out += "\n";
    out += m;
  }
  return out;
}

void Diagnostics::throwIfAny() const {
  if (!messages_.empty()) throw UserError(str());
}

}  // namespace stc
