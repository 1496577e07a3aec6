#pragma once
// The cost model: each kernel's initiation interval, latency and resources from its op, tile and dtype.
// The figures are estimates of the order Vitis HLS reports for these operators at 250 MHz on UltraScale+
// (UG1399, operator latency and resource tables; PG060, Floating-Point Operator, for the DSP48E2 slices of
// the f32 cores HLS binds by default; AMD WP486 for packing two 8-bit, or a 4x8-bit pair of,
// multiplications into one DSP48E2); they rank designs and predict resources, they are not synthesis.
// HLS shares an operator among the operations of a loop pipelined at II = N that fall in different cycles
// (UG1399, "Pipelining Loops" and resource sharing), so a kernel of f32 lanes at lane_ii N takes, of each
// kind of f32 operator, ceil(its count / N).

#include <cstdint>
#include <string>

#include "compiler/lower/kernel_graph.h"

namespace stc {

/// DSP48E2 slices per multiply-accumulate: 0.5 for w4a8 and i8 (two MACs per DSP), 1 for i16, 2 for
/// f16/bf16, 5 for f32 (3 for the multiplier, 2 for the adder).
///
/// The packing rule for w4a8 and i8: two multiplications that share one operand go through one DSP48E2's
/// 27 x 18 multiplier, the two other operands placed 18 bits apart on the 27-bit input, (w1 * 2^18 + w2)
/// * a = w1*a * 2^18 + w2*a, with the low product's sign corrected when the two are separated (AMD WP486,
/// "Deep Learning with INT8 Optimization on Xilinx Devices", which packs two int8 products this way; a
/// 4-bit weight times an 8-bit activation is a 12-bit product, narrower than WP486's 16, so the same
/// layout holds it with more guard bits). In a matmul tile the shared operand is the activation: the Tn
/// output columns of one k multiply the same x[k], so pairs of columns share a DSP. Four products per DSP
/// (AMD WP521, INT4 optimisation) need both operands at 4 bits, which w4a8's 8-bit activations are not.
double dspPerMac(const std::string& arithmetic);

/// Cycles of an f32 addition at 4 ns: the recurrence of a running f32 sum, which sets the II of f32
/// accumulations (cost_model.cpp) and which emitted loops declare to HLS.
constexpr int64_t kFloatAddLatency = 7;

/// Whether a W4A8 kernel's lanes look their results up instead of computing them: a unary elementwise op
/// on int8 values (256 results, emit/task_bodies.cpp: unaryTable). No DSP.
bool lanesLookUp(const Kernel& k, const std::string& quant);

/// Sets ii, latency, dsp and lut of every kernel of a design quantised as options.quant ("w4a8", or
/// "none": every operation f32, as stc emits it), the kernels of f32 lanes at options.laneIi (0: 1).
void costKernels(KernelGraph& graph, const CompileOptions& options);

}  // namespace stc
