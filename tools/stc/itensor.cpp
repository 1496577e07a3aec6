// stc itensor convert SRC DST: the converter a producer stream SRC needs to feed a consumer stream DST.
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/ir/diagnostics.h"
#include "compiler/ir/itensor.h"
#include "tools/stc/commands.h"

namespace stc::cli {

namespace {

// Parse errors read "column N: what"; show the text with a caret under column N.
ITensorType parseArg(const std::string& text, const char* which) {
  try {
    return ITensorType::parse(text);
  } catch (const UserError& e) {
    std::string msg = e.what();
    size_t column = 0, colon = msg.find(':');
    if (msg.rfind("column ", 0) == 0 && colon != std::string::npos) column = std::stoul(msg.substr(7, colon - 7));
    std::string out = std::string(which) + ":1:" + (column ? std::to_string(column) + ":" : "") +
                      " error: " + (column ? msg.substr(colon + 2) : msg) + "\n  " + text;
    if (column) out += "\n  " + std::string(column - 1, ' ') + "^";
    throw UserError(out);
  }
}

}  // namespace

Runner addItensor(CLI::App& app) {
  app.require_subcommand(1);
  CLI::App* convert = app.add_subcommand("convert", "the converter between a producer and a consumer stream");
  auto src = std::make_shared<std::string>();
  auto dst = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  convert->add_option("src", *src, "producer itensor type")->required();
  convert->add_option("dst", *dst, "consumer itensor type")->required();
  convert->add_flag("--json", *json, "print one JSON object");
  return [src, dst, json]() {
    ITensorType a = parseArg(*src, "src"), b = parseArg(*dst, "dst");
    ConverterPlan plan;
    try {
      plan = inferConverter(a, b);
    } catch (const UserError& e) {
      throw UserError(std::string("stc itensor convert: error: ") + e.what());
    }
    if (*json) {
      nlohmann::json j{{"compatible", plan.compatible}};
      if (!plan.compatible) {
        j["buffer_shape"] = plan.bufferShape;
        j["shared_loops"] = plan.sharedLoops;
        j["buffer_bytes"] = plan.bufferBytes;
      }
      std::cout << j.dump() << "\n";
    } else if (plan.compatible) {
      std::cout << "compatible: the streams are equal, a plain FIFO connects them\n";
    } else {
      std::cout << "converter: " << plan.sharedLoops << " shared outer loop(s), region [";
      for (size_t k = 0; k < plan.bufferShape.size(); ++k) std::cout << (k ? ", " : "") << plan.bufferShape[k];
      std::cout << "], ping-pong buffer " << plan.bufferBytes << " bytes\n";
    }
    return 0;
  };
}

}  // namespace stc::cli
