#pragma once
// The subcommands of `stc`. Each registers its options on the CLI11 app and returns a runner that
// yields the process exit code: 0 success, 1 bad input or failed check, 3 deadlock.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace stc::cli {

using Runner = std::function<int()>;

Runner addSimulate(CLI::App& app);
Runner addCheck(CLI::App& app);
Runner addItensor(CLI::App& app);
/// A subcommand of DESIGN.md that this build does not implement yet: says so and exits 1.
Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description);

/// Writes text to path atomically (a temporary file in the same folder, then rename); UserError on failure.
void writeFileAtomic(const std::string& path, const std::string& text);

}  // namespace stc::cli
