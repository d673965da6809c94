// pagedattn_device_probe: writes a device profile (the emulator's format,
// emulator/profiles/*.json, with a performance_model object) for the present GPU from
// cudaGetDeviceProperties plus a short device-to-device copy, so a machine nobody here can
// reach (a real BI-V100 under CoreX) replaces the guessed values. The emulator and the
// performance model load the file by path.
//
// --dry writes the same file from the emulator's h200 profile instead (no CUDA call), so
// the format is tested without a GPU: `pagedattn limits --profile FILE` must load it.
//
// usage: pagedattn_device_probe --out FILE [--name NAME] [--dry]
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cuda_check.h"
#include "emu/profile.h"

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

// What the profile is written from: the device's properties, or (--dry) a profile's.
struct Facts {
  std::string device, source;
  int warp = 32, sms = 1, threads_per_block = 1024, threads_per_sm = 2048, major = 0, minor = 0;
  int block_dim[3] = {1024, 1024, 64};
  long long grid_dim[3] = {2147483647LL, 65535, 65535};
  long long smem_block = 0, smem_optin = 0, smem_sm = 0, global_mem = 0, l2 = 0;
  int regs_block = 65536, regs_sm = 65536, blocks_sm = 32;
  double clock_mhz = 0, theoretical_gbps = 0, copy_gbps = 0;
  std::string bandwidth_source, copy_source;
};

Facts from_device() {
  cudaDeviceProp p{};
  gpubench::check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  Facts f;
  f.device = p.name;
  f.source = std::string("cudaGetDeviceProperties on ") + p.name;
  f.warp = p.warpSize, f.sms = p.multiProcessorCount, f.threads_per_block = p.maxThreadsPerBlock;
  f.threads_per_sm = p.maxThreadsPerMultiProcessor, f.major = p.major, f.minor = p.minor;
  for (int i = 0; i < 3; ++i) f.block_dim[i] = p.maxThreadsDim[i], f.grid_dim[i] = p.maxGridSize[i];
  f.smem_block = p.sharedMemPerBlock, f.smem_optin = p.sharedMemPerBlockOptin;
  f.smem_sm = p.sharedMemPerMultiprocessor, f.global_mem = p.totalGlobalMem, f.l2 = p.l2CacheSize;
  f.regs_block = p.regsPerBlock, f.regs_sm = p.regsPerMultiprocessor;
  f.blocks_sm = p.maxBlocksPerMultiProcessor;
  f.clock_mhz = attr(cudaDevAttrClockRate) / 1000.0;
  const double mem_clock_mhz = attr(cudaDevAttrMemoryClockRate) / 1000.0;
  const int bus_bits = attr(cudaDevAttrGlobalMemoryBusWidth);
  // Double data rate: two transfers per memory clock.
  f.theoretical_gbps = 2.0 * mem_clock_mhz * 1e6 * bus_bits / 8 / 1e9;
  f.bandwidth_source = f.source + ": memory clock x bus width x 2";
  f.copy_gbps = gpubench::copy_bandwidth_gbps(std::size_t(256) << 20);
  f.copy_source = "device-to-device copy of 256 MB";
  return f;
}

Facts from_profile(const std::string& name) {
  const emu::Profile p = emu::load_profile(name);
  Facts f;
  f.device = "dry run: the emulator's " + p.name + " profile";
  f.source = "--dry: emulator profile " + p.name + ", not a device";
  f.warp = p.warp_size, f.sms = p.multiprocessor_count,
  f.threads_per_block = p.max_threads_per_block;
  f.threads_per_sm = p.max_threads_per_multiprocessor;
  f.major = p.compute_capability_major, f.minor = p.compute_capability_minor;
  for (int i = 0; i < 3; ++i)
    f.block_dim[i] = p.max_block_dim[i], f.grid_dim[i] = p.max_grid_dim[i];
  f.smem_block = p.shared_memory_per_block, f.smem_optin = p.shared_memory_per_block_optin;
  f.smem_sm = p.shared_memory_per_multiprocessor, f.global_mem = p.total_global_memory;
  f.l2 = p.l2_cache_bytes, f.regs_block = p.registers_per_block, f.regs_sm = p.registers_per_block;
  f.clock_mhz = p.clock_mhz;
  f.theoretical_gbps = f.copy_gbps = p.memory_bandwidth_gbps;
  f.bandwidth_source = f.copy_source = f.source;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, name;
  bool dry = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out_path = argv[++i];
    } else if (a == "--name" && i + 1 < argc) {
      name = argv[++i];
    } else if (a == "--dry") {
      dry = true;
    } else {
      std::cerr << "pagedattn_device_probe: unknown argument '" << a
                << "' (allowed: --out FILE, --name NAME, --dry)\n";
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "pagedattn_device_probe: --out FILE is required\n";
    return 2;
  }
  try {
    if (!dry) {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::cerr << "pagedattn_device_probe: no CUDA device (--dry writes one from a profile)\n";
        return 1;
      }
    }
    const Facts p = dry ? from_profile("h200") : from_device();
    if (name.empty() && dry) name = "dry-h200";
    if (name.empty()) {
      for (const char* c = p.device.c_str(); *c; ++c)
        name += std::isalnum(static_cast<unsigned char>(*c))
                    ? static_cast<char>(std::tolower(static_cast<unsigned char>(*c)))
                    : '-';
    }
    const auto m = [&](json v) {
      return json{{"value", v}, {"source", p.source}, {"confidence", "measured"}};
    };
    const double fp32 = 2.0 * p.sms * fp32_lanes(p.major, p.minor) * p.clock_mhz * 1e6 / 1e12;
    json j;
    j["name"] = name;
    j["description"] = std::string("measured by pagedattn_device_probe on ") + p.device;
    j["warp_size"] = m(p.warp);
    j["multiprocessor_count"] = m(p.sms);
    j["max_threads_per_block"] = m(p.threads_per_block);
    j["max_block_dim"] = m({p.block_dim[0], p.block_dim[1], p.block_dim[2]});
    j["max_grid_dim"] = m({p.grid_dim[0], p.grid_dim[1], p.grid_dim[2]});
    j["shared_memory_per_block"] = m(p.smem_block);
    j["shared_memory_per_block_optin"] = m(p.smem_optin);
    j["shared_memory_per_multiprocessor"] = m(p.smem_sm);
    j["max_threads_per_multiprocessor"] = m(p.threads_per_sm);
    j["registers_per_block"] = m(p.regs_block);
    j["compute_capability"] = m({p.major, p.minor});
    j["total_global_memory"] = m(p.global_mem);
    j["l2_cache_bytes"] = m(p.l2);
    j["clock_mhz"] = m(p.clock_mhz);
    j["memory_bandwidth_gbps"] = {
        {"value", p.theoretical_gbps},
        {"source", p.bandwidth_source},
        {"confidence", "derived"},
        {"note", "a device-to-device copy measured " + std::to_string(int(p.copy_gbps)) + " GB/s"}};
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
         {{"value", p.theoretical_gbps > 0 ? p.copy_gbps / p.theoretical_gbps : 1.0},
          {"source", p.copy_source + " / memory_bandwidth_gbps"},
          {"confidence", "measured"}}},
        {"registers_per_multiprocessor", m(p.regs_sm)},
        {"max_blocks_per_multiprocessor", m(p.blocks_sm)}};
    std::ofstream(out_path) << j.dump(1) << "\n";
    std::printf(
        "device_probe: %s: %d SMs, warp %d, %zu B shared/block (opt-in %zu), copy %.0f GB/s "
        "(theoretical %.0f); wrote %s\n",
        p.device.c_str(), p.sms, p.warp, static_cast<std::size_t>(p.smem_block),
        static_cast<std::size_t>(p.smem_optin), p.copy_gbps, p.theoretical_gbps, out_path.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "pagedattn_device_probe: " << e.what() << "\n";
    return 1;
  }
}
