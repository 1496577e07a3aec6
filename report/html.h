#pragma once
// The HTML report of a run: one self-contained page (inline CSS and SVG, no script, nothing fetched),
// readable offline and printable, drawn from the JSON object a command prints with --json:
//   stc simulate NETWORK --json [--timeline]     summary, timeline (Gantt), token curves, HBM, deadlock
//   stc size-fifos NETWORK --json [--timeline]   the same for the sized network, with the LP's choices
//   stc run MODEL --json [--timeline]            the same, with the project's resources
//   stc simulate MODEL --decode P:G | --table --json   latency, TTFT and tokens/s against the roofline
// Sections whose data the result lacks (a result saved without --timeline) say so instead of drawing.
// Every chart is one <svg>; the page is the same, byte for byte, for the same result.

#include <nlohmann/json.hpp>
#include <string>

namespace stc::report {

/// The page. `source` names the result in messages; a result that is not one of the above, or lacks a
/// field the page needs, throws UserError naming the field.
std::string renderHtml(const nlohmann::json& result, const std::string& source);

}  // namespace stc::report
