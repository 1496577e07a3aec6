// stc report RESULT.json -o PAGE.html: the HTML report (report/html.h) of a result saved with --json
// (--timeline adds the timeline, the Gantt chart and the token curves): stc simulate, size-fifos or run.
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/ir/yaml_io.h"
#include "report/html.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

// "line L, column C" of a byte offset in text (1-based).
std::string position(const std::string& text, size_t byte) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n')
      ++line, column = 1;
    else
      ++column;
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

}  // namespace

Runner addReport(CLI::App& app) {
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  app.add_option("result", *input, "a result saved with --json (and --timeline for the timeline and curves)")
      ->required();
  app.add_option("-o,--output", *output, "the HTML page to write")->required();
  return [input, output]() {
    checkOutputPaths({*output}, {*input});
    std::string text = readTextFile(*input);
    nlohmann::json result;
    try {
      result = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      std::string what = e.what();
      size_t colon = what.rfind(": ");
      throw UserError(*input + ":" + position(text, e.byte > 0 ? e.byte - 1 : 0) +
                      ": error: not JSON: " + (colon == std::string::npos ? what : what.substr(colon + 2)));
    }
    std::string page = report::renderHtml(result, *input);
    writeFileAtomic(*output, page);
    std::cout << "wrote " << *output << "\n";
    return 0;
  };
}

}  // namespace stc::cli
