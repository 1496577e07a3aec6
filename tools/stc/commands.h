#pragma once
// The subcommands of `stc`. Each registers its options on the CLI11 app and returns a runner that
// yields the process exit code: 0 success, 1 bad input or failed check, 3 deadlock.

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/network.h"

namespace stc::cli {

using Runner = std::function<int()>;

Runner addSimulate(CLI::App& app);
Runner addCheck(CLI::App& app);
Runner addItensor(CLI::App& app);
Runner addSizeFifos(CLI::App& app);

/// Symbol bindings from --ctx N and --bind NAME=N; `command` prefixes error messages.
Bindings parseSymbolBindings(const std::string& command, const std::optional<int64_t>& ctx,
                             const std::vector<std::string>& binds);
/// Refuses a network whose symbols are not all bound, naming the flag that binds each.
void requireBound(const Network& net, const Bindings& bindings, const std::string& file);
/// A subcommand of DESIGN.md that this build does not implement yet: says so and exits 1.
Runner addUnimplemented(CLI::App& app, const std::string& name, const std::string& description);

/// Writes text to path atomically (a temporary file in the same folder, then rename); UserError on failure.
void writeFileAtomic(const std::string& path, const std::string& text);

}  // namespace stc::cli
