// vLLM's V1 attention in miniature, as third-party CUDA (CUDA's header names, a plain
// `extern __shared__ char shared_mem[];` inside `namespace vllm`), with the bug of issue 22:
// the launch's dynamic shared memory sized for seq_len logits instead of seq_len rounded up
// to the block size. The kernel writes a logit (0 for a masked slot) for every slot of the
// last cache block, so it writes 32 bytes past the launch's size, into what on a GPU is
// unused shared memory: the output is unchanged, and only memcheck can tell. This program
// runs it padded (clean) and unpadded (one finding naming the pool, offset, size, thread,
// block), on both warp widths, and exits non-zero otherwise. Instrumented (the documented
// build: pagedattn_emulator_race_instrumentation in the tree, -fsanitize=thread -Wno-tsan at
// compile time outside it) the finding names the thread; without the instrumentation the
// canary past the launch's size finds the write after the block.
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace vllm {

constexpr int kHeadSize = 64, kBlockSize = 16, kThreads = 128;

// One sequence, one head: q [kHeadSize]; k and v caches [block][slot][kHeadSize].
__global__ void paged_attention_v1_kernel(float* out, const float* q, const float* k_cache,
                                          const float* v_cache, const int* block_table, int seq_len,
                                          float scale) {
  const int num_warps = kThreads / warpSize;
  const int warp = threadIdx.x / warpSize, lane = threadIdx.x % warpSize;
  extern __shared__ char shared_mem[];
  float* logits = reinterpret_cast<float*>(shared_mem);
  __shared__ float red_smem[2 * 32];
  const int num_blocks = (seq_len + kBlockSize - 1) / kBlockSize;

  // Each warp takes whole cache blocks, one lane per slot; a masked slot's logit is 0.
  float qk_max = -FLT_MAX;
  for (int b = warp; b < num_blocks; b += num_warps) {
    const int physical = block_table[b];
    for (int slot = lane; slot < kBlockSize; slot += warpSize) {
      const int token = b * kBlockSize + slot;
      float qk = 0.0f;
      for (int d = 0; d < kHeadSize; ++d)
        qk += q[d] * k_cache[(physical * kBlockSize + slot) * kHeadSize + d];
      qk *= scale;
      const bool mask = token >= seq_len;
      logits[token] = mask ? 0.0f : qk;  // the write that needs the padding
      if (!mask) qk_max = fmaxf(qk_max, qk);
    }
  }
  for (int m = warpSize / 2; m >= 1; m /= 2)
    qk_max = fmaxf(qk_max, __shfl_xor_sync(0xffffffff, qk_max, m));
  if (lane == 0) red_smem[warp] = qk_max;
  __syncthreads();
  qk_max = lane < num_warps ? red_smem[lane] : -FLT_MAX;
  for (int m = warpSize / 2; m >= 1; m /= 2)
    qk_max = fmaxf(qk_max, __shfl_xor_sync(0xffffffff, qk_max, m));
  qk_max = __shfl_sync(0xffffffff, qk_max, 0);

  float exp_sum = 0.0f;
  for (int i = threadIdx.x; i < seq_len; i += kThreads) {
    const float e = __expf(logits[i] - qk_max);
    logits[i] = e;
    exp_sum += e;
  }
  for (int m = warpSize / 2; m >= 1; m /= 2) exp_sum += __shfl_xor_sync(0xffffffff, exp_sum, m);
  if (lane == 0) red_smem[num_warps + warp] = exp_sum;
  __syncthreads();
  exp_sum = lane < num_warps ? red_smem[num_warps + lane] : 0.0f;
  for (int m = warpSize / 2; m >= 1; m /= 2) exp_sum += __shfl_xor_sync(0xffffffff, exp_sum, m);
  exp_sum = __shfl_sync(0xffffffff, exp_sum, 0);
  const float inv_sum = __fdividef(1.0f, exp_sum + 1e-6f);
  for (int i = threadIdx.x; i < seq_len; i += kThreads) logits[i] *= inv_sum;
  __syncthreads();

  for (int d = threadIdx.x; d < kHeadSize; d += kThreads) {
    float acc = 0.0f;
    for (int t = 0; t < seq_len; ++t)
      acc += logits[t] *
             v_cache[(block_table[t / kBlockSize] * kBlockSize + t % kBlockSize) * kHeadSize + d];
    out[d] = acc;
  }
}

}  // namespace vllm

namespace {

constexpr int kSeqLen = 200;  // 12.5 blocks of 16: the last block has 8 masked slots

// vLLM's size: max(logits, outputs); `padded` rounds the logits up to the block size.
std::size_t shared_bytes(bool padded, int warp_size) {
  const int tokens =
      padded ? (kSeqLen + vllm::kBlockSize - 1) / vllm::kBlockSize * vllm::kBlockSize : kSeqLen;
  const std::size_t logits = tokens * sizeof(float);
  const std::size_t outputs = (vllm::kThreads / warp_size / 2) * vllm::kHeadSize * sizeof(float);
  return logits > outputs ? logits : outputs;
}

int run(const char* profile) {
  emu::use_profile(profile);
  const int ws = emu::current_profile().warp_size;
  const int blocks = (kSeqLen + vllm::kBlockSize - 1) / vllm::kBlockSize;
  std::vector<float> q(vllm::kHeadSize), k(blocks * vllm::kBlockSize * vllm::kHeadSize),
      v(k.size());
  std::vector<int> table(blocks);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 11) - 5.0f;
  for (int b = 0; b < blocks; ++b) table[b] = blocks - 1 - b;  // physical blocks reversed
  float *d_out, *d_q, *d_k, *d_v;
  int* d_table;
  cudaMalloc(&d_out, q.size() * sizeof(float));
  cudaMalloc(&d_q, q.size() * sizeof(float));
  cudaMalloc(&d_k, k.size() * sizeof(float));
  cudaMalloc(&d_v, v.size() * sizeof(float));
  cudaMalloc(&d_table, table.size() * sizeof(int));
  cudaMemcpy(d_q, q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_k, k.data(), k.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_v, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_table, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice);

  int failures = 0;
  std::vector<float> result[2];
  for (bool padded : {true, false}) {
    const std::size_t smem = shared_bytes(padded, ws);
    const cudaError_t e =
        emu::launch(vllm::paged_attention_v1_kernel, dim3(1), dim3(vllm::kThreads), smem, d_out,
                    d_q, d_k, d_v, d_table, kSeqLen, 0.125f);
    result[padded].resize(q.size());
    cudaMemcpy(result[padded].data(), d_out, q.size() * sizeof(float), cudaMemcpyDeviceToHost);
    const auto& f = emu::last_findings();
    if (padded) {
      if (e != cudaSuccess || !f.empty()) {
        std::printf("%s padded: %s\n", profile, cudaGetErrorString(e));
        ++failures;
      }
      continue;
    }
    // The 8 masked slots of the last block are floats 200..207: bytes 800..831 of an
    // 800-byte launch, written by lanes 8..15 of the warp that owns that block (warp 0).
    const bool exact = emu::memcheck_coverage().instrumented > 0;
    const std::string want =
        exact ? "block (0,0,0) thread (8,0,0): invalid write of dynamic shared memory "
                "'vllm::shared_mem' at byte offset 800, past its end (the launch gave 800 "
                "bytes), 4 bytes wide; 7 more such writes in this block"
              : "block (0,0,0): invalid write of dynamic shared memory 'vllm::shared_mem' at "
                "byte offset 800, past its end (the launch gave 800 bytes); found by the canary "
                "after the block";
    if (smem != 800 || e != cudaErrorIllegalAddress || f.size() != 1 ||
        f[0].message.find(want) == std::string::npos) {
      std::printf("%s unpadded (%zu bytes): %s; want a finding containing \"%s\"\n", profile, smem,
                  cudaGetErrorString(e), want.c_str());
      ++failures;
    }
  }
  // What the bug does not change: the output, bit for bit.
  if (std::memcmp(result[0].data(), result[1].data(), q.size() * sizeof(float)) != 0) {
    std::printf("%s: the unpadded launch changed the output\n", profile);
    ++failures;
  }
  cudaFree(d_out);
  cudaFree(d_q);
  cudaFree(d_k);
  cudaFree(d_v);
  cudaFree(d_table);
  return failures;
}

}  // namespace

int main() {
  emu::set_checks(emu::check_memcheck);
  int failures = 0;
  for (const char* profile : {"h200", "bi-v100"}) failures += run(profile);
  std::printf("vllm_v1_unpadded (%s): %s\n",
              emu::memcheck_coverage().instrumented ? "instrumented" : "not instrumented",
              failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
