// The proven per-output-element error bound of the paged-attention kernels as built
// (kernels/src/attention_kernel.cuh, kernels/src/reduce_kernel.cuh): theorem
// `kernel_error_bound`, derived step by step in proofs/error_bound.md. Plain C++17 with no
// dependency on kernels/, the emulator or the reference, so the audit, the property tests
// and any user can call it.
//
// What it bounds: for one output element (sequence, head, d) with exact value
//   y = sum_i p_i v_i,   p = softmax(x),   x_i = scale * q.k_i (+ ALiBi),
// the kernel's output `out` satisfies
//   |o32 - y| <= Bound::fp32           (o32: the fp32 value the kernel rounds last)
//   |out - o32| <= Bound::final_rounding (rounding o32 to the output dtype)
//   |out - y| <= Bound::total = fp32 + final_rounding.
// The bound is componentwise: it scales with A = sum_i p_i |v_i| (the condition of the
// weighted sum), not with |y|, so an output that is small by cancellation is judged fairly.
//
// Assumptions (proofs/error_bound.md, "Assumptions"): IEEE binary32 round to nearest even
// for + - * / and fmaf (explicit fmaf only; nvcc --fmad=false); exp within ExpAccuracy;
// no overflow anywhere (finite inputs; |v| and n small enough that n * max|v| < 2^127);
// underflow (gradual or flushed to zero, e.g. __expf's ftz) is covered by an absolute term.
// The inputs of a row are finite: a NaN or inf input makes y NaN (nan_propagation) and
// there is nothing to bound.
#pragma once
#include <cstdint>
#include <functional>

namespace pagedattn::bound {

// Element formats: query/output (f32, f16, bf16) and cache (the same, or fp8).
enum class Format { f32, f16, bf16, fp8_e4m3, fp8_e5m2 };

// Unit roundoff 2^-p of round to nearest (p = significand bits with the hidden one):
// f32 2^-24, f16 2^-11, bf16 2^-8, e4m3 2^-4, e5m2 2^-3.
double unit_roundoff(Format f);
// Largest absolute error of rounding to nearest below the normal range: half the
// subnormal quantum (f32 2^-150, f16 2^-25, bf16 2^-134).
double subnormal_half_quantum(Format f);

// vLLM's numerics choices (pagedattn::NumericsChoices, kernels/include/pagedattn/params.h),
// each alone or together. All false: Numerics::exact_fp32 (ours).
struct Choices {
  bool partials_in_output_dtype = false;  // V2's tmp_out rounded to the output dtype
  bool epsilon_denominator = false;       // 1 / (s + 1e-6) then a multiply
  bool round_probabilities = false;       // p_i (and fp8-dequantized elements) rounded
  static Choices exact_fp32() { return {}; }
  static Choices vllm_compatible() { return {true, true, true}; }
};

// Accuracy of the device's exp: |exp_hat(x) - exp(x)| <= (a + b|x|) * 2^-23 * exp(x),
// i.e. a + b|x| "ulps" where an ulp is counted as 2^-23 exp(x) (never less than the true
// ulp of exp(x)). The default is CUDA's documented __expf accuracy, 2 + floor(1.173|x|)
// ulps (CUDA C Programming Guide, Mathematical Functions): the stated default wherever a
// device's own accuracy is unknown (BI-V100's profile says null: emulator/profiles/).
struct ExpAccuracy {
  double a_ulp = 2;
  double b_ulp = 1.173;
  // CUDA's __expf (and the default for a device whose accuracy is unknown).
  static ExpAccuracy cuda_fast() { return {2, 1.173}; }
  // The emulator's exp model (emulator/include/emu/device_math.h): the correctly rounded
  // exp moved by at most max_ulp float steps. Each step changes a float by a factor within
  // 1 +- 2^-23 and the correct rounding by a factor within 1 +- 2^-24, so
  // a = max_ulp + 1/2 plus a 1e-3 ulp margin for the products of those factors.
  static ExpAccuracy emulator(int max_ulp) { return {max_ulp + 0.5 + 1e-3, 0}; }
};

// The kernel as launched.
struct KernelConfig {
  Format scalar = Format::f16;  // query and output dtype (vLLM's scalar_t): f32, f16, bf16
  Format cache = Format::f16;   // == scalar ("auto"), fp8_e4m3 or fp8_e5m2
  int head_size = 128;
  int block_size = 16;
  int warp_size = 32;           // 32 on NVIDIA, 64 on BI-V100 (the profile's warp_size)
  int threads_per_block = 128;  // pagedattn::kThreadsPerBlock
  int partition_size = 0;       // 0: V1 (one partition); > 0: V2's tokens per partition
  Choices choices;
  ExpAccuracy exp;
  double scale = 1;    // the logit scale (only vLLM's rounding of fp8 keys needs it)
  double k_scale = 1;  // fp8 caches: the dequantization scales (vLLM's k_scale, v_scale)
  double v_scale = 1;
};

// Exact quantities of one (sequence, head) row, in real arithmetic. With p = softmax(x):
//   x_i = the exact logit of token i (scale * q.k_i with k dequantized, + ALiBi),
//   Q_i = |scale| * sum_d |q_d k_id| (k dequantized: the magnitude the dot product sums).
// exact_magnitudes() below computes all of them.
struct RowMagnitudes {
  std::int64_t n = 0;        // tokens (this sequence's seq_len)
  double spread = 0;         // x_max - x_min
  double max_abs_logit = 0;  // max_i |x_i|
  double max_qk = 0;         // max_i Q_i
  double max_abs_v = 0;      // max_{i,d} |v_id| (dequantized, v_scale included)
  double sum_abs_q = 0;      // sum_d |q_d|
  double p_gap = 0;          // sum_i p_i (x_max - x_i)
  double p_qk = 0;           // sum_i p_i Q_i
  double p_x = 0;            // sum_i p_i |x_i|
};

// Exact quantities of one output element d of that row (y = sum_i p_i v_id). The weight
// perturbations enter as sum_i p_i tau_i (v_id - y) (lemma 4.7), hence the |v_id - y|.
struct ElementMagnitudes {
  double abs_exact = -1;  // |y|; < 0: unknown (A is used, |y| <= A)
  double a = 0;           // A = sum_i p_i |v_id|
  double dev = 0;         // sum_i p_i |v_id - y|
  double dev_gap = 0;     // sum_i p_i |v_id - y| (x_max - x_i)
  double dev_qk = 0;      // sum_i p_i |v_id - y| Q_i
  double dev_x = 0;       // sum_i p_i |v_id - y| |x_i|
};

struct Bound {
  double fp32 = 0;            // bound on |o32 - y|
  double final_rounding = 0;  // bound on |out - o32| (0 for f32 outputs)
  double total = 0;           // fp32 + final_rounding: the bound on |out - y|
  // The parts of fp32 (they add up to it, before a 1e-9 relative safety margin):
  double softmax = 0;   // perturbed weights: logit, subtraction and exp errors
  double sums = 0;      // rounding in the numerator and denominator sums
  double tail = 0;      // the last division (or vLLM's reciprocal and epsilon)
  double absolute = 0;  // subnormal and underflow terms
};

// Theorem kernel_error_bound: the bound for one output element. `row.n == 0` gives 0 (the
// kernels write an exact 0). Returns +inf components when a hypothesis of the derivation
// fails (the perturbed weights' relative error reaching 1: far outside any fp32 use).
// Throws std::invalid_argument (naming the field) for inconsistent configurations
// (scalar not f32/f16/bf16, cache neither the scalar nor fp8, sizes not positive, a
// partition size not a multiple of the block size, warp not a multiple of the block).
Bound kernel_error_bound(const KernelConfig& cfg, const RowMagnitudes& row,
                         const ElementMagnitudes& el);

// Fills `row` and `el[0..head_size)` from exact values given as doubles: `logits[n]`
// (x_i), `qk_abs[n]` (Q_i), `values[n * head_size]` (token-major, dequantized) and
// `sum_abs_q`. The doubles must be within a relative 1e-12 of the exact values; the
// results are inflated by a relative 1e-9 to cover that and this function's own double
// rounding. abs_exact is |sum_i p_i v_id| computed the same way. n may be 0.
void exact_magnitudes(std::int64_t n, int head_size, const double* logits, const double* qk_abs,
                      const double* values, double sum_abs_q, RowMagnitudes* row,
                      ElementMagnitudes* el);
// The same, streaming the values: value_row(i, out) writes token i's head_size values into
// out (called twice per token, in order: y first, then |v - y|), so no n x head_size
// array is needed.
void exact_magnitudes(std::int64_t n, int head_size, const double* logits, const double* qk_abs,
                      const std::function<void(std::int64_t, double*)>& value_row, double sum_abs_q,
                      RowMagnitudes* row, ElementMagnitudes* el);

// Widens exact_magnitudes' results (row, el[0..head_size)) computed from logits each known
// only within an absolute `logit_err` of the exact logit (a double dot product whose terms
// cancel is not within a relative 1e-12): gaps x_max - x_i move by <= 2 logit_err, |x_i| by
// <= logit_err, and every weight p_i by a factor within exp(+-2 logit_err), which the
// p-weighted sums and y then carry (magnitudes.cpp derives each term). 0 changes nothing.
void widen_for_logit_error(double logit_err, int head_size, RowMagnitudes* row,
                           ElementMagnitudes* el);

}  // namespace pagedattn::bound
