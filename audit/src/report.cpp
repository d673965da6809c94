// Table, JSON and CSV. Infinite errors (a NaN or inf output where the exact value is
// finite) are written as the string "inf" in JSON (JSON has no infinity) and as inf in
// CSV and the table; metrics of a case that did not launch are null / empty.
#include "pagedattn_audit/report.h"

#include "pagedattn_audit/provenance.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

namespace pagedattn::audit {
namespace {

using nlohmann::ordered_json;

ordered_json number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return v;
}

std::string exp_model_text(const CaseResult& r) {
  if (r.exp_max_ulp == 0) return "exact";
  return r.exp_mode + ":" + std::to_string(r.exp_max_ulp) +
         (r.exp_mode == "random" ? ":" + std::to_string(r.exp_seed) : "");
}

std::string num_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

std::string short_num(double v) {
  if (std::isinf(v)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// audit/SCHEMA.md, key traffic: measured, or absent and why.
ordered_json traffic_json(const CaseResult& r) {
  if (!r.traffic) return {{"status", "absent"}, {"reason", r.traffic_absent}};
  const Traffic& t = *r.traffic;
  const TrafficRun& run = t.runs.at(0);
  ordered_json launches = ordered_json::array();
  for (const LaunchBytes& l : run.launches) {
    launches.push_back({{"kernel", l.kernel},
                        {"role", l.role},
                        {"bytes_read", l.bytes_read},
                        {"bytes_written", l.bytes_written},
                        {"kv_bytes_read", l.kv_bytes_read}});
  }
  return {{"status", "measured"},
          {"kv_bytes_exist", t.kv_bytes_exist},
          {"query_bytes", t.query_bytes},
          {"block_table_bytes", t.block_table_bytes},
          {"bytes_read", run.bytes_read()},
          {"bytes_written", run.bytes_written()},
          {"kv_bytes_read", run.kv_bytes_read()},
          {"launches", std::move(launches)}};
}

}  // namespace

void print_table(std::ostream& os, const std::vector<CaseResult>& cases) {
  char line[512];
  std::snprintf(
      line, sizeof line,
      "%-3s %-8s %-5s %-8s %-7s %-5s %-13s %-4s %-18s %-14s %-8s %9s %9s %9s %9s %9s %7s %8s\n",
      "ker", "profile", "dtype", "kv", "seq_len", "P", "distribution", "seed", "num", "exp",
      "status", "max_abs", "mean_abs", "max_ulp", "max_rel", "bound", "err/bnd", "time_s");
  os << line;
  for (const CaseResult& r : cases) {
    const bool m = r.metrics.has_value();
    std::snprintf(line, sizeof line,
                  "%-3s %-8s %-5s %-8s %-7lld %-5s %-13s %-4llu %-18s %-14s %-8s %9s %9s %9s %9s "
                  "%9s %7s %8.3f\n",
                  (r.kernel + (r.variant == "grouped" ? "g" : "")).c_str(), r.profile.c_str(),
                  r.dtype.c_str(), r.kv_cache_dtype.c_str(), static_cast<long long>(r.seq_len),
                  r.partition_size ? std::to_string(r.partition_size).c_str() : "-",
                  r.distribution.c_str(), static_cast<unsigned long long>(r.seed),
                  r.numerics.c_str(), exp_model_text(r).c_str(), r.status.c_str(),
                  m ? short_num(r.metrics->max_abs_err).c_str() : "-",
                  m ? short_num(r.metrics->mean_abs_err).c_str() : "-",
                  m ? short_num(r.metrics->max_ulp_err).c_str() : "-",
                  m ? short_num(r.metrics->max_rel_err).c_str() : "-",
                  r.bound() ? short_num(*r.bound()).c_str() : "-",
                  r.err_over_bound() ? short_num(*r.err_over_bound()).c_str() : "-", r.time_s);
    os << line;
    if (!r.launched) os << "    reason: " << r.reason << "\n";
    if (!r.grouped_fallback.empty())
      os << "    grouped: ran the per-head kernels (" << r.grouped_fallback << ")\n";
    if (m && r.metrics->nonfinite) {
      os << "    " << r.metrics->nonfinite
         << " non-finite outputs where the exact value is finite\n";
    }
    for (const std::string& f : r.findings) os << "    finding: " << f << "\n";
  }
}

std::string to_json(const std::vector<CaseResult>& cases, const std::string& command) {
  ordered_json root;
  root["schema_version"] = kSchemaVersion;
  root["tool"] = "pagedattn audit";
  root["command"] = command;
  root["provenance"] = provenance();  // the commit and source digest judged
  ordered_json arr = ordered_json::array();
  for (const CaseResult& r : cases) {
    ordered_json j;
    j["kernel"] = r.kernel;
    j["variant"] = r.variant;
    j["grouped_fallback"] =
        r.grouped_fallback.empty() ? ordered_json() : ordered_json(r.grouped_fallback);
    j["profile"] = r.profile;
    j["backend"] = r.backend;
    j["dtype"] = r.dtype;
    j["kv_cache_dtype"] = r.kv_cache_dtype;
    j["num_seqs"] = r.num_seqs;
    j["num_heads"] = r.num_heads;
    j["num_kv_heads"] = r.num_kv_heads;
    j["head_size"] = r.head_size;
    j["block_size"] = r.block_size;
    j["seq_len"] = r.seq_len;
    j["partition_size"] = r.partition_size ? ordered_json(r.partition_size) : ordered_json();
    j["alibi"] = r.alibi;
    j["distribution"] = r.distribution;
    j["seed"] = r.seed;
    j["numerics"] = r.numerics;
    j["exp_model"] = {
        {"mode", r.exp_mode},
        {"max_ulp", r.exp_max_ulp},
        {"seed", r.exp_seed},
        {"stated_ulp_a", r.exp_stated_a >= 0 ? ordered_json(r.exp_stated_a) : ordered_json()},
        {"stated_ulp_b", r.exp_stated_a >= 0 ? ordered_json(r.exp_stated_b) : ordered_json()}};
    j["status"] = r.status;
    j["launched"] = r.launched;
    j["reason"] = r.reason;
    const bool m = r.metrics.has_value();
    j["max_abs_err"] = m ? number(r.metrics->max_abs_err) : ordered_json();
    j["mean_abs_err"] = m ? number(r.metrics->mean_abs_err) : ordered_json();
    j["max_ulp_err"] = m ? number(r.metrics->max_ulp_err) : ordered_json();
    j["max_rel_err"] = m ? number(r.metrics->max_rel_err) : ordered_json();
    j["nonfinite"] = m ? ordered_json(r.metrics->nonfinite) : ordered_json();
    j["elements"] = m ? ordered_json(r.metrics->elements) : ordered_json();
    j["exact_nan"] = m ? ordered_json(r.metrics->exact_nan) : ordered_json();
    j["exact_nan_mismatch"] = m ? ordered_json(r.metrics->exact_nan_mismatch) : ordered_json();
    j["bound"] = r.bound() ? number(*r.bound()) : ordered_json();
    j["err_over_bound"] = r.err_over_bound() ? number(*r.err_over_bound()) : ordered_json();
    if (r.worst_bound) {
      const bound::Bound& b = *r.worst_bound;
      j["worst_bound_parts"] = {{"element", r.metrics->worst_element},
                                {"softmax", number(b.softmax)},
                                {"sums", number(b.sums)},
                                {"tail", number(b.tail)},
                                {"absolute", number(b.absolute)},
                                {"final_rounding", number(b.final_rounding)},
                                {"total", number(b.total)}};
    } else {
      j["worst_bound_parts"] = ordered_json();
    }
    j["findings"] = r.findings;
    j["time_s"] = r.time_s;
    j["ref_time_s"] = r.ref_time_s;
    j["gpu_vs_emulator_max_abs_diff"] =
        r.gpu_vs_emulator_max_abs_diff ? number(*r.gpu_vs_emulator_max_abs_diff) : ordered_json();
    j["traffic"] = traffic_json(r);
    arr.push_back(std::move(j));
  }
  root["cases"] = std::move(arr);
  return root.dump(2) + "\n";
}

std::string to_csv(const std::vector<CaseResult>& cases) {
  std::ostringstream os;
  os << "kernel,profile,backend,dtype,kv_cache_dtype,num_seqs,num_heads,num_kv_heads,head_size,"
        "block_size,seq_len,partition_size,alibi,distribution,seed,numerics,exp_mode,"
        "exp_max_ulp,exp_seed,status,launched,reason,max_abs_err,mean_abs_err,max_ulp_err,"
        "max_rel_err,nonfinite,bound,err_over_bound,time_s,ref_time_s,"
        "gpu_vs_emulator_max_abs_diff,variant,grouped_fallback\n";
  for (const CaseResult& r : cases) {
    const bool m = r.metrics.has_value();
    const auto met = [&](double v) { return m ? num_text(v) : std::string(); };
    os << r.kernel << ',' << r.profile << ',' << r.backend << ',' << r.dtype << ','
       << r.kv_cache_dtype << ',' << r.num_seqs << ',' << r.num_heads << ',' << r.num_kv_heads
       << ',' << r.head_size << ',' << r.block_size << ',' << r.seq_len << ','
       << (r.partition_size ? std::to_string(r.partition_size) : "") << ','
       << (r.alibi ? "true" : "false") << ',' << r.distribution << ',' << r.seed << ','
       << r.numerics << ',' << r.exp_mode << ',' << r.exp_max_ulp << ',' << r.exp_seed << ','
       << r.status << ',' << (r.launched ? "true" : "false") << ',' << csv_field(r.reason) << ','
       << met(m ? r.metrics->max_abs_err : 0) << ',' << met(m ? r.metrics->mean_abs_err : 0) << ','
       << met(m ? r.metrics->max_ulp_err : 0) << ',' << met(m ? r.metrics->max_rel_err : 0) << ','
       << (m ? std::to_string(r.metrics->nonfinite) : "") << ','
       << (r.bound() ? num_text(*r.bound()) : "") << ','
       << (r.err_over_bound() ? num_text(*r.err_over_bound()) : "") << ',' << num_text(r.time_s)
       << ',' << num_text(r.ref_time_s) << ','
       << (r.gpu_vs_emulator_max_abs_diff ? num_text(*r.gpu_vs_emulator_max_abs_diff) : "") << ','
       << r.variant << ',' << csv_field(r.grouped_fallback) << '\n';
  }
  return os.str();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error(path + ": cannot be written");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot be written (" + ec.message() + ")");
  }
}

}  // namespace pagedattn::audit
