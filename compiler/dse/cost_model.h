#pragma once
// The cost model: each kernel's initiation interval, latency and resources from its op, tile and dtype.
// The figures are estimates of the order Vitis HLS reports for these operators at 250 MHz on UltraScale+
// (UG1399, operator latency and resource tables; AMD WP486 for packing two 8-bit, or a 4x8-bit pair of,
// multiplications into one DSP48E2); they rank designs and predict resources, they are not synthesis.

#include <cstdint>
#include <string>

#include "compiler/lower/kernel_graph.h"

namespace stc {

/// DSP48E2 slices per multiply-accumulate: 0.5 for w4a8 and i8 (two MACs per DSP), 1 for i16, 2 for
/// f16/bf16, 5 for f32 (3 for the multiplier, 2 for the adder).
double dspPerMac(const std::string& arithmetic);

/// Sets ii, latency, dsp and lut of every kernel.
void costKernels(KernelGraph& graph);

}  // namespace stc
