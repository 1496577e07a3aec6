// The numeric rules an emitted project's kernels and host share with stc's quantised reference: types,
// W4A8 rounding and packing, activation functions. stc compiles this header into its reference and
// copies it into every project (src/st_numeric.h), so that the C simulation matches it bit for bit.
#pragma once

#include <cmath>
#include <limits>
#include <cstdint>

#if defined(__SYNTHESIS__) || defined(__VITIS_HLS__)
#include <ap_int.h>
typedef ap_int<8> st_i8;    // an 8-bit activation
typedef ap_uint<8> st_u8;   // two 4-bit weights: element 2i in bits 0-3, element 2i+1 in bits 4-7
typedef ap_int<32> st_i32;  // an accumulator
typedef ap_int<64> st_i64;  // a row's sums of int8 values and squares
typedef ap_uint<64> st_u64;  // a row's sum of softmax exponentials (st_softmax_stats)
#else
typedef int8_t st_i8;
typedef uint8_t st_u8;
typedef int32_t st_i32;
typedef int64_t st_i64;
typedef uint64_t st_u64;
#endif

/// One stream token: N elements (f32, int8, int32, or bytes of two int4 weights), row-major over
/// the token's element shape. Tok<512 / bits, Element> is also a DMA port's 512-bit word.
template <int N, typename Element = float>
struct Tok {
  Element v[N];
};

/// Requantisation to int8: round half away from zero, then saturate to [-128, 127]; NaN gives 0.
inline st_i8 st_q8(float v) {
  const float r = std::round(v);
  if (!(r == r)) return 0;
  if (r >= 127.0f) return 127;
  if (r <= -128.0f) return -128;
  return static_cast<st_i8>(static_cast<int>(r));
}

/// Requantisation into a masked tensor (stc's QuantScale::masked), whose -128 is a key a mask's fill set:
/// -128 only for a fill, a value at least 100 times the tensor's range below zero (-inf, the dtype's
/// minimum, -1e4 beside scores of a few units); any other value saturates to -127.
inline st_i8 st_q8_masked(float v) {
  const float r = std::round(v);
  if (r <= -12700.0f) return -128;
  return r <= -127.0f ? st_i8(-127) : st_q8(v);
}

/// Weight quantisation to int4: round half away from zero, saturate to [-8, 7].
inline int st_q4(float v) {
  const float r = std::round(v);
  if (!(r == r)) return 0;
  if (r >= 7.0f) return 7;
  if (r <= -8.0f) return -8;
  return static_cast<int>(r);
}

/// Element `i` of 4-bit weights packed two per byte (two's complement nibbles) in `packed`: a pointer,
/// an array or anything else indexed by byte (a stream_of_blocks lock, whose conversion is non-const).
template <typename Bytes>
inline int st_w4(Bytes&& packed, long i) {
  const int byte = static_cast<int>(packed[i / 2]);
  const int nibble = (i % 2) ? (byte >> 4) & 15 : byte & 15;
  return nibble >= 8 ? nibble - 16 : nibble;
}

/// Stores weight `w` (in [-8, 7]) as element `i`, keeping the other half of its byte.
template <typename Bytes>
inline void st_set_w4(Bytes&& packed, long i, int w) {
  const int nibble = w & 15, byte = static_cast<int>(packed[i / 2]);
  packed[i / 2] = static_cast<st_u8>((i % 2) ? (byte & 0x0f) | (nibble << 4) : (byte & 0xf0) | nibble);
}

/// The sum and the maximum of v[0..N) as balanced trees: HLS keeps the order of float additions, so a
/// running `sum += v[i]` over a token would chain N additions where a tree has ceil(log2 N) levels.
template <int N>
struct st_tree {
  static float sum(const float* v) { return st_tree<N / 2>::sum(v) + st_tree<N - N / 2>::sum(v + N / 2); }
  static float max(const float* v) {
    const float a = st_tree<N / 2>::max(v), b = st_tree<N - N / 2>::max(v + N / 2);
    return a > b ? a : b;
  }
};
template <>
struct st_tree<1> {
  static float sum(const float* v) { return v[0]; }
  static float max(const float* v) { return v[0]; }
};

/// max and min that give NaN when either operand is NaN, as torch.maximum/minimum and ONNX Max/Min do
/// (std::fmax drops it).
inline float st_max(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
inline float st_min(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
inline float st_silu(float x) { return x / (1.0f + std::exp(-x)); }
// torch's softplus (beta 1, threshold 20): x itself above 20, where log(1 + e^x) rounds to it.
inline float st_softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }
inline float st_gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678f)); }
inline float st_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}
inline float st_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
// exp(a - b) among an f32 softmax's running terms, 0 where a is -inf (keys masked by a -inf bias): a tile
// of masked keys, or a row masked so far, adds nothing, where exp(-inf - -inf) would be NaN.
inline float st_exp_from(float a, float b) {
  return a == -INFINITY ? 0.0f : std::exp(a - b);
}

/// Row statistics from integer sums, as the .stats kernels accumulate them: a row's int8 values q (real =
/// scale * q) summed exactly, s1 = sum(q) and s2 = sum(q * q) over its D elements (integer additions take
/// one cycle, so the kernels accumulate at II=1, and padding, zero, adds nothing). Layernorm: the mean and
/// the variance, from D * s2 - s1 * s1 (exact in 64 bits for D up to 2^24), so that a large mean
/// cancels nothing.
inline void st_layernorm_stats(int64_t s1, int64_t s2, long D, float scale, float* mean, float* var) {
  const float d = static_cast<float>(D);
  *mean = scale * (static_cast<float>(s1) / d);
  *var = (scale * scale) * (static_cast<float>(s2 * D - s1 * s1) / (d * d));
}
/// Rmsnorm: the mean square.
inline float st_rmsnorm_stats(int64_t s2, long D, float scale) {
  return (scale * scale) * (static_cast<float>(s2) / static_cast<float>(D));
}

/// Softmax statistics from integers, as the W4A8 .stats kernel accumulates them: exp(x) for each int8
/// score q (x = scale * q) in block floating point, M(q) * 2^(E(q) - 31) with a mantissa M(q) in
/// [2^30, 2^31] (32 bits) and E(q) = ceil(q * scale / ln 2), both from 256-entry tables stc computes for the
/// tensor's scale (reference/quantized.h: softmaxTable). A token sums its mantissas aligned to its own
/// largest exponent (st_shr); a row adds tokens into two lanes in turn (the token before last's lane),
/// so that each lane's recurrence (a subtraction, a shift and an addition) has two cycles at II=1, and
/// merges the lanes at its last token. Alignment drops the bits shifted out, so the sum depends on the
/// tokens' width, which the reference takes from the kernel. The statistics: the maximum as the .apply
/// kernel subtracts it (scale * qmax, the largest dequantised value) and the sum of exp(x - max), S /
/// M(qmax) (the row's exponent is E(qmax)).
const int st_exp_empty = -(1 << 30);  // the exponent of an empty sum

/// x / 2^d, rounded down; zero from d = 64 on.
inline st_u64 st_shr(st_u64 x, int d) {
  return d >= 64 ? st_u64(0) : st_u64(x >> d);
}

/// (e, s) += (e2, s2): the sum aligned to the larger exponent.
inline void st_expsum_add(int& e, st_u64& s, int e2, st_u64 s2) {
  const int m = e2 > e ? e2 : e;
  s = st_shr(s, m - e) + st_shr(s2, m - e2);
  e = m;
}

inline void st_softmax_stats(st_u64 S, st_u64 mmax, int qmax, float scale, float* max, float* sum) {
  *max = static_cast<float>(qmax) * scale;
  *sum = static_cast<float>(static_cast<double>(S) / static_cast<double>(mmax));
}

/// The statistics of a masked softmax input (stc's QuantScale::masked: its -128 is a key a mask's fill set
/// far below the others, -inf, whose table mantissa is 0 and so adds nothing to S): as above, or where
/// every key the row keeps is masked, the maximum -inf and the sum their count, so that the .apply kernel
/// weighs them evenly (as torch weighs keys all filled with one finite value).
inline void st_softmax_stats_masked(st_u64 S, st_u64 mmax, int qmax, long masked_keys, float scale,
                                    float* max, float* sum) {
  if (qmax == -128) {
    *max = -INFINITY;
    *sum = static_cast<float>(masked_keys);
  } else {
    st_softmax_stats(S, mmax, qmax, scale, max, sum);
  }
}
