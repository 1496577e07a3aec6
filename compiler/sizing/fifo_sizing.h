#pragma once
// LP-based FIFO sizing (DESIGN.md, "FIFO sizing"): one simulation with unbounded FIFOs, one linear
// program over task start offsets, depths from the token equations, and verifying simulations.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/network.h"
#include "compiler/ir/platform.h"
#include "sim/program.h"
#include "sim/result.h"

namespace stc::sizing {

enum class Strategy {
  kNormal,       ///< each consumer read at its measured pace
  kConservative  ///< every consumer assumed as slow as the slowest task (the paper's conservative mode)
};

struct SizingOptions {
  Bindings bindings;
  Platform platform = defaultPlatform();  ///< its HBM times the DMA tasks
  Strategy strategy = Strategy::kNormal;
  int maxRounds = 16;
  /// Measure with the FIFOs of a stream from HBM (a DMA read's, and those on through adapters and
  /// converters to its kernel) unbounded too: the sizer then gives weight streams the depth to prefetch
  /// what the unbounded run read ahead (more memory; faster when the prefetch overlaps a wait).
  bool prefetch = false;
  /// FIFO bits the sized network should keep within (0: the platform's BRAM and URAM). Past it, the
  /// writers are measured paced by their readers instead of running ahead into unbounded FIFOs. Past
  /// a 4096th of it, the paced sizing is tried too and kept where it takes fewer bits within 1% of
  /// the unbounded run's cycles, 2% more for each halving of the bits, at most 5% (fewerBitsTolerance;
  /// pacedTrial).
  int64_t budgetBits = 0;
  /// Measure paced whatever the bits (each FIFO as deep as the network's and at least 3).
  bool paced = false;
  /// Step 6: past a 4096th of the budget, try the paced sizing too (off: a caller that weighs its
  /// own candidates by cycles, as the LLM estimator does, and would only pay for the second sizing).
  bool pacedTrial = true;
  /// Measure with the FIFOs a converter's reader writes (a row replayed per column tile) bounded as the
  /// network's: what runs ahead of a waiting consumer then waits in front of the converter, once, not once
  /// per replay. Step 6 tries it where the replays' FIFOs took a quarter of the bits or more.
  bool boundReplays = false;
  /// FIFOs whose depth is given (by name): measured at it, kept at it, never raised.
  std::map<std::string, int64_t> pinned;
  /// Whether a sized network fits the device (its kernels and its FIFOs in whole BRAM and URAM blocks);
  /// unset: bits alone decide. When the design sized by bits does not fit, the sizer tries the other
  /// measuring run (paced, or from the unbounded run) and keeps that design if it fits (step 7).
  std::function<bool(const Network& sized)> fits;
};

/// Where a FIFO of a given depth and width lives on the FPGA, and how many primitives it takes.
struct MemoryBinding {
  std::string kind;  ///< "shift_register", "lutram", "bram18k" or "uram"
  int64_t units = 0; ///< LUTs for shift registers and LUTRAM, BRAM_18K or URAM blocks otherwise
};
/// Shift register up to 1024 bits; LUTRAM up to 64 deep; BRAM_18K (512 x 36 each) up to 16 blocks;
/// URAM (4096 x 72 each) beyond.
MemoryBinding bindMemory(int64_t depth, int64_t width);

struct SizedFifo {
  std::string name;
  int64_t width = 0;
  int64_t depth = 0;
  int64_t bits = 0;
  int64_t maxOccupancy = 0;  ///< in the unbounded run
  int64_t tokens = 0;
  double delay = 0;          ///< s_reader - s_writer from the LP
  MemoryBinding memory;
};

/// Why a sizing measured paced (SizingResult::paced).
enum class PacedReason {
  kNone,        ///< measured unbounded
  kAsked,       ///< SizingOptions::paced
  kOverMemory,  ///< sized from the unbounded run, the FIFOs took more bits than the budget
  kFewerBits,   ///< fewer bits than sized from the unbounded run, within pacedTolerance of that run's cycles
  kOverDevice,  ///< sized from the unbounded run, the design did not fit the device (SizingOptions::fits)
};

struct SizingResult {
  bool trueDeadlock = false;       ///< deadlocks even with unbounded FIFOs (the pinned ones aside)
  bool pinnedDeadlock = false;     ///< ... deadlocks only because of the pinned depths
  sim::SimResult unbounded;        ///< the measuring run
  std::vector<SizedFifo> fifos;
  int64_t totalBits = 0;
  int64_t baselineMaxOccupancyBits = 0;
  int64_t baselineFullBits = 0;
  int64_t cyclesUnbounded = 0;
  bool paced = false;       ///< sized from the paced run (over budget when unbounded)
  PacedReason pacedWhy = PacedReason::kNone;
  /// Sized from a run with converters' replays bounded (SizingOptions::boundReplays), kept for its fewer
  /// bits at the unbounded run's latency (within 1%)
  bool replaysBounded = false;
  int64_t cyclesPaced =
      0;  ///< the paced measuring run, when paced (SizingOptions::paced alone: cyclesUnbounded too)
  int64_t cyclesSized = 0;
  /// kFewerBits: how much slower than the unbounded run the paced design may be, a fraction
  /// (fewerBitsTolerance)
  double pacedTolerance = 0;
  std::vector<int64_t> cyclesSizedAt;  ///< sizeFifosAcross: at each binding
  int rounds = 0;                  ///< verifying simulations run
  bool lpFeasible = true;
  double lpSeconds = 0;
  std::map<std::string, int64_t> memoryCounts;  ///< FIFOs per memory kind
};

/// How much slower than the unbounded run's design (a fraction of its cycles) a paced design with
/// `pacedBits` may be and still be kept for its fewer bits against `freeBits`: 1%, and where the free
/// sizing takes more than a 256th of `budgetBits` (1.3 Mbit of the U55C's memory), 2% more for each
/// halving of the bits, at most 5% (a twelfth of 36 Mbit of FIFOs for 3.9% more cycles is a design an
/// FPGA engineer takes; a tenth fewer bits for 3% more is not, nor 5% of a decode layer's cycles for
/// a few tens of Kbit).
double fewerBitsTolerance(int64_t freeBits, int64_t pacedBits, int64_t budgetBits);

/// The values at which a symbol's range [1, maximum] is sampled for sizing: 1, the stream tile, one past
/// it (a padded tile), 128 and the maximum, those within the range, increasing.
std::vector<int64_t> symbolSamples(int64_t maximum, int64_t tile);

/// Where a range [low, high] of a symbol is checked besides its samples: every power of two in it and
/// the value one past it, increasing (the loops' counts and a padded tile's change there).
std::vector<int64_t> rangeProbes(int64_t low, int64_t high);

/// The depths the sizer measures a network at (sizeFifos' first run): unbounded, but a stream from HBM
/// (unless prefetching) kDmaReadDepth deep or its network depth if deeper; `paced`: every FIFO at least as
/// deep as the network's, a converter's region at 1; a pinned FIFO at its pin.
std::vector<int64_t> measureDepths(const sim::Program& prog, const SizingOptions& options, bool paced);

/// Sizes every FIFO of net; `sized` receives net with the new depths and nothing else changed.
SizingResult sizeFifos(const Network& net, const SizingOptions& options, Network& sized);

/// Depths that hold at several bindings (a symbol's range, sampled; each adds to options.bindings): each
/// binding sized alone, every FIFO at the largest depth any asks for, verified at every binding (raised
/// where one deadlocks or runs more than 1% over its unbounded run). The result's measurements are the
/// last binding's.
SizingResult sizeFifosAcross(const Network& net, const SizingOptions& options,
                             const std::vector<Bindings>& at, Network& sized);

/// Depths that hold over a symbol's range [low, high] (other symbols as options.bindings binds them): sized
/// at the range's samples (symbolSamples within it, and both ends), then checked by simulation at every
/// power of two in the range and one past it (and at `alsoCheck`'s values in it): a value where the sized
/// network deadlocks or runs more than 1% over its unbounded run (a paced design kept for its fewer bits: its
/// pacedTolerance) joins the samples and the range is sized
/// again (at most `maxPasses` times). `checks` receives every value simulated with the final depths,
/// increasing.
struct RangeCheck {
  int64_t value = 0;
  int64_t cycles = 0;     ///< with the sized depths; 0: deadlock
  int64_t unbounded = 0;  ///< measured as the sizer measures (unbounded, or paced when it paced)
  bool sampled = false;   ///< one of the values sized at
  bool ok = false;        ///< no deadlock, within 1% of unbounded (or the result's pacedTolerance)
};
SizingResult sizeFifosOverRange(const Network& net, const SizingOptions& options, const std::string& symbol,
                                int64_t low, int64_t high, int64_t tile, Network& sized,
                                std::vector<RangeCheck>& checks, const std::vector<int64_t>& alsoCheck = {},
                                int maxPasses = 4);

}  // namespace stc::sizing
