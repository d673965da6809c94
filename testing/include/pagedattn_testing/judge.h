// The judge: a kernel's output against the exact reference (pagedattn::ref) with the
// proven bound (theorem kernel_error_bound, proofs/bound), per output element. The one
// bound every test, the property suite, the audit and gpu_check use; no other bound is
// written anywhere.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pagedattn/params.h"
#include "pagedattn_bound/bound.h"
#include "pagedattn_ref/reference.h"
#include "pagedattn_testing/case.h"

namespace pagedattn::testing {

// The exact reference of a case, rounded to the case's scalar type.
ref::Output exact(const Case& c);

// The exact magnitudes kernel_error_bound takes (upper bounds), per (seq, head) row and per
// output element, computed once per case by bound::exact_magnitudes from the exact q, keys
// and values (it bounds its own double arithmetic; magnitudes.cpp, each KV head's tiles
// decoded once for its GQA group). Rows that read a non-finite input get a NaN spread:
// their exact output is NaN, nothing is bounded.
struct Magnitudes {
  int head_size = 0;
  std::vector<bound::RowMagnitudes> rows;          // [seq][head]
  std::vector<bound::ElementMagnitudes> elements;  // [seq][head][d]
};
Magnitudes magnitudes(const Case& c);
// The same over tokens [first, end) of one row only (a V2 partition's tokens, their
// logits as in the whole row: ALiBi positions count from the sequence's end), into
// `row` and `el[0, head_size)`. Returns false when an input read is not finite.
bool row_magnitudes(const Case& c, int seq, int head, std::int64_t first, std::int64_t end,
                    bound::RowMagnitudes* row, bound::ElementMagnitudes* el);

// What a launch ran as, as the bound needs it.
struct BoundSetup {
  int warp_size = 32;
  int partition_size = 0;  // 0: V1 (one partition); > 0: V2's partition size
  NumericsChoices choices{};
  // CUDA's documented __expf accuracy covers every exp model of the emulator up to 2 ulps
  // and the device's own; the audit passes the emulator's exact model per case.
  bound::ExpAccuracy exp = bound::ExpAccuracy::cuda_fast();
};
// The warp width of an emulator profile ("h200": 32, "bi-v100": 64), read once.
int profile_warp_size(const std::string& profile);
// A launch of `kernel` with `options` on `profile`.
BoundSetup bound_setup(Kernel kernel, const Options& options, const std::string& profile);
bound::KernelConfig kernel_config(const Case& c, const BoundSetup& setup);

// Bound::total of every output element [seq][head][d]; `exact` and `exact_err` (the
// reference's value and rigorous error, ref::Output) give |y| <= |exact| + exact_err.
// NaN for the elements of rows with a non-finite input.
std::vector<double> element_bounds(const Case& c, const Magnitudes& m, const BoundSetup& setup,
                                   const std::vector<double>& exact,
                                   const std::vector<double>& exact_err);
std::vector<double> element_bounds(const Case& c, const BoundSetup& setup,
                                   const ref::Output& exact);
// The whole bound::Bound (its parts: softmax, sums, tail, absolute, final rounding) of one
// element j = (seq * num_heads + head) * head_size + d, as element_bounds computes its
// total: which term of the bound dominates there.
bound::Bound element_bound_parts(const Case& c, const Magnitudes& m, const BoundSetup& setup,
                                 const std::vector<double>& exact,
                                 const std::vector<double>& exact_err, std::size_t j);

// |got - exact| / bound for a finite `got` and a finite exact result that the reference
// knows as `value` within `value_err` (ref::Output::value_err, rigorous), never below the
// true ratio: the difference, plus value_err, over the bound, each rounded toward +inf
// (pagedattn_bound/interval.h). An output equal to the reference's value counts 0 when
// value_err is within the bound (its true ratio is then at most value_err / bound <= 1,
// which passes every verdict; otherwise it counts that ratio); an error over a zero bound,
// and a NaN value_err, count +inf. The one rule of every verdict here and of the audit's
// err_over_bound.
double ratio_over_bound(double got, double value, double value_err, double bound);

// max over elements of ratio_over_bound: 0/0 counts 0; any other error over a zero
// bound, a non-finite `got` where the exact value is finite, and a finite `got` where it
// is NaN, count +inf (a NaN `got` where the exact value is NaN counts 0).
struct Verdict {
  double worst = 0;   // <= 1: every element within its bound
  std::string where;  // the worst element: "seq s head h d k: got .. exact .. bound .."
};
Verdict err_over_bound(const Case& c, const std::vector<double>& got, const ref::Output& exact,
                       const std::vector<double>& bounds);
// The same per element, for callers that report more than the worst one.
std::vector<double> errors_over_bound(const std::vector<double>& got, const ref::Output& exact,
                                      const std::vector<double>& bounds);

// A case with its exact output and magnitudes computed once, to judge many runs of it
// (kernels, profiles, options).
class Judge {
 public:
  explicit Judge(Case c);  // by value: a generated case moves in
  const Case& input() const { return c_; }
  const ref::Output& exact_output() const { return exact_; }
  const Magnitudes& magnitudes() const { return m_; }
  std::vector<double> bounds(const BoundSetup& setup) const;
  Verdict verdict(const std::vector<double>& got, const BoundSetup& setup) const;
  // A run of `kernel` with `options` on `profile`.
  Verdict verdict(const std::vector<double>& got, Kernel kernel, const Options& options,
                  const std::string& profile) const;

 private:
  Case c_;
  ref::Output exact_;
  Magnitudes m_;
};

// The judge in one call, for an output computed anywhere (another implementation, a
// device): err/bound per element [seq][head][d] against our numerics' bound and against
// Numerics::vllm_compatible's, for `kernel` (V1, or V2 at `partition_size`) on a device
// of warp `warp_size` with an exp within CUDA's __expf accuracy.
struct Judgement {
  std::vector<double> ours, vllm;
  double worst_ours = 0, worst_vllm = 0;
};
Judgement judge(const Case& c, Kernel kernel, int partition_size, int warp_size,
                const std::vector<double>& got);

}  // namespace pagedattn::testing
