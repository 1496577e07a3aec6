// stc: the command line over the whole toolkit (DESIGN.md, "Command line").
//   stc compile | simulate | size-fifos | emit | run | dse | itensor convert | check | report | conform
// Exit codes: 0 success; 1 bad input or a failed check; 3 a simulation that deadlocked.
#include <iostream>
#include <map>

#include "compiler/ir/diagnostics.h"
#include "tools/stc/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"streamtensor: compile tensor graphs to stream dataflow accelerators for the AMD Alveo U55C, "
               "simulate them cycle by cycle, size their FIFOs and emit the Vitis HLS project."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stc 0.1.0");
  std::map<CLI::App*, stc::cli::Runner> runners;
  auto add = [&](CLI::App* sub, stc::cli::Runner r) { runners[sub] = std::move(r); };
  CLI::App* compile = app.add_subcommand("compile", "compile a graph (YAML or ONNX) into a network");
  add(compile, stc::cli::addCompile(*compile));
  CLI::App* simulate = app.add_subcommand("simulate", "simulate a network cycle by cycle");
  add(simulate, stc::cli::addSimulate(*simulate));
  CLI::App* size = app.add_subcommand("size-fifos", "size every FIFO of a network with a linear program");
  add(size, stc::cli::addSizeFifos(*size));
  CLI::App* emit = app.add_subcommand("emit", "emit the Vitis HLS project of a model or network");
  add(emit, stc::cli::addEmit(*emit));
  CLI::App* run = app.add_subcommand("run", "compile, simulate, size, verify and emit in one go");
  add(run, stc::cli::addRun(*run));
  CLI::App* dse =
      app.add_subcommand("dse", "explore a graph's or model layer's design space: the Pareto front");
  add(dse, stc::cli::addDse(*dse));
  CLI::App* itensor = app.add_subcommand("itensor", "itensor type tools");
  add(itensor, stc::cli::addItensor(*itensor));
  CLI::App* check = app.add_subcommand("check", "validate a network, graph or platform file");
  add(check, stc::cli::addCheck(*check));
  CLI::App* report = app.add_subcommand("report", "write the HTML report of a result saved with --json");
  add(report, stc::cli::addReport(*report));
  CLI::App* conform = app.add_subcommand(
      "conform", "check an emitted project's stream trace (make trace) against its network");
  add(conform, stc::cli::addConform(*conform));

  if (argc > 1 && argv[1][0] != '-') {  // a typo of a command: say so, not "a subcommand is required"
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "stc: error: unknown command '" << argv[1] << "' (the commands: " << known << ")\n";
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stc: error: " << e.what() << " (see stc --help)\n";
    return 1;
  }
  try {
    for (CLI::App* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const stc::UserError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "stc: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {  // a bug: no user input should get here
    std::cerr << "stc: internal error: " << e.what() << " (please report it)\n";
    return 1;
  }
  return 1;
}
