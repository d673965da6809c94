// pagedattn_device_probe: writes a device profile (the emulator's format,
// emulator/profiles/*.json, with a performance_model object) for the present GPU from
// cudaGetDeviceProperties plus a short device-to-device copy, so a machine nobody here can
// reach (a real BI-V100 under CoreX) replaces the guessed values. The emulator and the
// performance model load the file by path.
//
// usage: pagedattn_device_probe --out FILE [--name NAME]
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cuda_check.h"

using gpubench::check;
using json = nlohmann::json;

namespace {

int attr(cudaDeviceAttr a) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, a, 0) == cudaSuccess ? v : 0;
}

// FP32 lanes per SM by compute capability (CUDA programming guide, "Arithmetic
// Instructions"); 64 where unknown.
int fp32_lanes(int major, int minor) {
  if (major == 8 && minor == 0) return 64;
  if (major == 7) return 64;
  if (major >= 8) return 128;
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, name;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--name" && i + 1 < argc) {
      name = argv[++i];
    } else {
      std::cerr << "pagedattn_device_probe: unknown argument '" << a
                << "' (allowed: --out FILE, --name NAME)\n";
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "pagedattn_device_probe: --out FILE is required\n";
    return 2;
  }
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      std::cerr << "pagedattn_device_probe: no CUDA device\n";
      return 1;
    }
    cudaDeviceProp p{};
    check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    if (name.empty()) {
      for (const char* c = p.name; *c; ++c)
        name += std::isalnum(static_cast<unsigned char>(*c))
                    ? static_cast<char>(std::tolower(static_cast<unsigned char>(*c)))
                    : '-';
    }
    const std::string src = std::string("cudaGetDeviceProperties on ") + p.name;
    const auto m = [&](json v) {
      return json{{"value", v}, {"source", src}, {"confidence", "measured"}};
    };
    const double clock_mhz = attr(cudaDevAttrClockRate) / 1000.0;
    const double mem_clock_mhz = attr(cudaDevAttrMemoryClockRate) / 1000.0;
    const int bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
    // Double data rate: two transfers per memory clock.
    const double theoretical_gbps = 2.0 * mem_clock_mhz * 1e6 * bus_bits / 8 / 1e9;
    const double copy_gbps = gpubench::copy_bandwidth_gbps(std::size_t(256) << 20);
    const double fp32 =
        2.0 * p.multiProcessorCount * fp32_lanes(p.major, p.minor) * clock_mhz * 1e6 / 1e12;
    json j;
    j["name"] = name;
    j["description"] = std::string("measured by pagedattn_device_probe on ") + p.name;
    j["warp_size"] = m(p.warpSize);
    j["multiprocessor_count"] = m(p.multiProcessorCount);
    j["max_threads_per_block"] = m(p.maxThreadsPerBlock);
    j["max_block_dim"] = m({p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]});
    j["max_grid_dim"] = m({p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]});
    j["shared_memory_per_block"] = m(p.sharedMemPerBlock);
    j["shared_memory_per_block_optin"] = m(p.sharedMemPerBlockOptin);
    j["shared_memory_per_multiprocessor"] = m(p.sharedMemPerMultiprocessor);
    j["max_threads_per_multiprocessor"] = m(p.maxThreadsPerMultiProcessor);
    j["registers_per_block"] = m(p.regsPerBlock);
    j["compute_capability"] = m({p.major, p.minor});
    j["total_global_memory"] = m(p.totalGlobalMem);
    j["l2_cache_bytes"] = m(p.l2CacheSize);
    j["clock_mhz"] = m(clock_mhz);
    j["memory_bandwidth_gbps"] = {
        {"value", theoretical_gbps},
        {"source", src + ": memory clock x bus width x 2"},
        {"confidence", "derived"},
        {"note", "a device-to-device copy measured " + std::to_string(int(copy_gbps)) + " GB/s"}};
    j["fp32_tflops"] = {{"value", fp32},
                        {"source", "SMs x FP32 lanes per SM (by compute capability) x 2 x clock"},
                        {"confidence", "derived"}};
    j["fp16_tflops"] = {{"value", 2 * fp32},
                        {"source", "twice fp32 (packed half2), not the tensor cores"},
                        {"confidence", "derived"}};
    j["expf_fast_ulp"] = {{"value", {2, 1.173}},
                          {"source", "CUDA C programming guide, mathematical functions"},
                          {"confidence", "high"}};
    j["partial_mask_syncwarp"] = {
        {"value", true}, {"source", "CUDA, sm_70+"}, {"confidence", "high"}};
    // One bandwidth figure (memory_bandwidth_gbps above); the measured copy enters as the
    // fraction of it the model reaches.
    j["performance_model"] = {
        {"bandwidth_efficiency",
         {{"value", theoretical_gbps > 0 ? copy_gbps / theoretical_gbps : 1.0},
          {"source", "device-to-device copy of 256 MB / memory_bandwidth_gbps"},
          {"confidence", "measured"}}},
        {"registers_per_multiprocessor", m(p.regsPerMultiprocessor)},
        {"max_blocks_per_multiprocessor", m(p.maxBlocksPerMultiProcessor)}};
    std::ofstream(out_path) << j.dump(1) << "\n";
    std::printf(
        "device_probe: %s: %d SMs, warp %d, %zu B shared/block (opt-in %zu), copy %.0f GB/s "
        "(theoretical %.0f); wrote %s\n",
        p.name, p.multiProcessorCount, p.warpSize, p.sharedMemPerBlock, p.sharedMemPerBlockOptin,
        copy_gbps, theoretical_gbps, out_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "pagedattn_device_probe: " << e.what() << "\n";
    return 1;
  }
}
