#pragma once
// HBM channel assignment by phase: DMAs that stream at the same time go to different pseudo-channels,
// DMAs of phases that follow one another may share them.

#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"

namespace stc {

/// Simulates `net` with symbols bound by `bindings` and reassigns every DMA's channel so that each DMA
/// meets the least traffic of others on its channel while it runs (largest first, within each fused
/// group); repeated `rounds` times, each on the previous assignment. Leaves a deadlocking network as it is.
void assignChannelsByPhase(Network& net, const Platform& platform, const Bindings& bindings, int rounds = 2);

}  // namespace stc
