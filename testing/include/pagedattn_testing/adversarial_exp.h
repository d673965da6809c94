// The adversarial exp model for a whole case (emu::math::ExpModel::Mode::adversarial):
// every exp the kernels compute is moved max_ulp ulps, up for the tokens whose value lies
// above the row's exact output and down for the others (the sign of v_i - y), so every
// weight's error moves the output the same way; where --exp-mode up moves every weight by
// one common factor that mostly cancels. One element d per (seq, head) row is the target,
// the one of largest sum_i p_i |v_id - y_d| (ElementMagnitudes::dev: what the bound's
// softmax term charges for the exp); the others get the same directions.
//
// Which exp belongs to which token: the model sees only the argument, so each (row,
// partition) has a table of the exact arguments x_i - m (V1: m the row's max; V2: the
// partition's) with their direction, and the kernel's argument (within its logit error of
// the exact one) takes the nearest entry's. V2's reduce gets its own table per row, of
// m_p - M with the sign of o_p - y. The row and partition come from the calling block
// (blockIdx.x = head, blockIdx.y = seq, blockIdx.z = partition, as attention_kernel.cuh
// and reduce_kernel.cuh lay out their grids; the reduce is the launch whose gridDim.z is 1
// when there are several partitions). The grouped kernels put several heads in one block:
// for them the lookup is right only in a case of one row.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "emu/device_math.h"
#include "pagedattn_testing/case.h"
#include "pagedattn_testing/judge.h"

namespace pagedattn::testing {

class AdversarialExp {
 public:
  // `exact` is the exact output [seq][head][d] (ref::Output::value), `m` the case's
  // magnitudes; partition_size 0: V1 (one partition per row).
  AdversarialExp(const Case& c, const Magnitudes& m, const std::vector<double>& exact,
                 int partition_size);
  // The model to set around a launch (emu::math::set_exp_model); it points at this
  // object, which must outlive the launch.
  emu::math::ExpModel model(int max_ulp) const;
  // The targeted element of a row.
  int element(int seq, int head) const {
    return target_[static_cast<std::size_t>(seq) * num_heads_ + head];
  }
  // The direction the model takes for argument x in the table of (seq, head, partition);
  // partition == num_partitions(): the reduce's.
  bool direction(int seq, int head, int partition, float x) const;
  int num_partitions() const { return num_partitions_; }

 private:
  using Table = std::vector<std::pair<float, bool>>;  // sorted by argument
  static bool up(float x, const void* self);
  const Table& table(int seq, int head, int partition) const;

  int num_seqs_ = 0, num_heads_ = 0, num_partitions_ = 1;
  std::vector<int> target_;    // [seq][head]
  std::vector<Table> tables_;  // [seq][head][partition + 1]
};

}  // namespace pagedattn::testing
