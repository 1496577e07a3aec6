// Helpers shared by the subcommands.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "compiler/ir/diagnostics.h"
#include "tools/stc/commands.h"

namespace stc::cli {

void writeFileAtomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UserError(path + ": error: cannot write the file");
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw UserError(path + ": error: cannot write the file");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError(path + ": error: cannot write the file");
  }
}

Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description) {
  app.allow_extras();
  return [name, description]() {
    std::cerr << "stc " << name << ": unsupported: " << description << " is not implemented in this build yet\n";
    return 1;
  };
}

}  // namespace stc::cli
