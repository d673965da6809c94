// The property campaign: every registered property (or --properties a,b) for --cases
// cases, shard K of N (--shard K/N draws seeds disjoint from every other shard's), one
// JSON summary per shard; --merge folds shard summaries into one (out/properties/
// campaign.json, the schema the report reads). README.md shows Slurm and GNU parallel.
//
// Per property a shard records cases, discards, failures, cases/s, the distribution of the
// kernel outputs' err_over_bound per dtype/kernel/numerics tag (err_over_bound_by_tag,
// RatioHistogram in harness.h; summed by --merge), and the worst
// err_over_bound any case reached (properties call observe()), with that case and a
// RapidCheck reproduce string: the campaign replays the same seed without shrinking
// up to the first case at least that bad, and RapidCheck reports it as a failure of
// "err_over_bound < worst", which gives the case and its reproduce string. The replay
// runs no case before that one: RapidCheck draws case i from its own split of the seed
// and a size that depends only on how many cases passed or were discarded before it, so
// the replay passes or discards each earlier case as the run did (the run records which)
// and reaches the same case at the same size without running the ones before it.
//
// Every summary records what it judged ("provenance": the commit and source digests this
// program was built from, scripts/source_digest.py) and each row its shard; --merge refuses
// shards of other sources, other campaign seeds or shard counts, and a shard or seed that
// appears twice, so a merged count is a sum over disjoint cases.
#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>
#include "harness.h"
#include "pagedattn_audit/provenance.h"
#include "registry.h"

using nlohmann::json;
using namespace pagedattn::prop;

namespace {

// FNV-1a of a property's name: its seed does not depend on which others run.
std::uint64_t name_hash(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// splitmix64: well-spread seeds from (seed, shard, property name).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A histogram as JSON: bins[i] counts err/bound in [10^(lo + i / per), 10^(lo + (i + 1) / per)).
json histogram_json(const RatioHistogram& h) {
  return {{"zero", h.zero},
          {"below", h.below},
          {"over", h.over},
          {"log10_low", RatioHistogram::kLowDecade},
          {"bins_per_decade", RatioHistogram::kPerDecade},
          {"bins", h.bins},
          {"worst", h.worst}};
}
RatioHistogram histogram_of(const json& j) {
  RatioHistogram h;
  h.zero = j.at("zero");
  h.below = j.at("below");
  h.over = j.at("over");
  h.bins = j.at("bins").get<std::vector<long>>();
  h.worst = j.at("worst");
  if (h.bins.size() != static_cast<std::size_t>(RatioHistogram::kBins) ||
      j.at("log10_low") != RatioHistogram::kLowDecade ||
      j.at("bins_per_decade") != RatioHistogram::kPerDecade)
    throw std::runtime_error("--merge: a histogram with other bins");
  return h;
}

// CPU seconds of the process, its emulator threads included: what a property costs whatever
// else shares the cores (the wall clock measures the neighbours too).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

json run_one(const PropertyDef& def, std::uint64_t seed, int cases, const std::string& shard) {
  double worst = -1;
  std::size_t worst_at = 0;    // the invocation that first reached `worst`
  std::vector<bool> returned;  // per invocation: the body returned (else it discarded)
  std::map<std::string, RatioHistogram> by_tag;  // over the passing cases
  PropertyDef tracked{def.name,
                      [&def, &worst, &worst_at, &returned, &by_tag] {
                        const std::size_t at = returned.size();
                        returned.push_back(false);
                        observation() = {};
                        def.body();
                        returned[at] = true;
                        if (observation().worst > worst) {
                          worst = observation().worst;
                          worst_at = at;
                        }
                        for (const auto& [tag, h] : observation().by_tag) by_tag[tag].add(h);
                      },
                      cases};
  const double cpu0 = cpu_seconds();
  const RunResult r = run_property(tracked, seed, cases);
  const double cpu = cpu_seconds() - cpu0;
  json row = {{"name", def.name},
              {"seed", seed},
              {"shard", shard},
              {"cases", r.cases},
              {"discards", r.discards},
              {"failures", r.passed ? 0 : 1},
              {"seconds", r.seconds},
              {"cpu_seconds", cpu},
              {"cases_per_s", r.seconds > 0 ? r.cases / r.seconds : 0.0},
              {"worst_err_over_bound", nullptr},
              {"worst_case", nullptr},
              {"reproduce", nullptr},
              {"err_over_bound_by_tag", json::object()}};
  for (const auto& [tag, h] : by_tag) row["err_over_bound_by_tag"][tag] = histogram_json(h);
  if (!r.passed) {
    row["worst_case"] = r.message;
    row["reproduce"] = r.reproduce;
    return row;
  }
  if (worst < 0) return row;  // an exact (bitwise) property: no error to rank
  row["worst_err_over_bound"] = worst;
  // skip: pass or discard the invocations before worst_at as the run did, without running
  // them. Should the case there not reach `worst` again (it would take a nondeterministic
  // property), every later case runs, and then the whole run is replayed.
  double found = -1;  // err_over_bound of the case the replay stopped at
  auto replay = [&](bool skip) {
    std::size_t invocation = 0;
    PropertyDef find{def.name,
                     [&def, worst, worst_at, &returned, &invocation, &found, skip] {
                       const std::size_t at = invocation++;
                       if (skip && at < worst_at) {
                         if (!returned[at]) RC_DISCARD("discarded in the run");
                         return;
                       }
                       observation() = {};
                       def.body();
                       if (observation().worst >= worst) {
                         found = observation().worst;
                         RC_FAIL("worst case: err_over_bound " +
                                 std::to_string(observation().worst) + " (" +
                                 observation().what + ")");
                       }
                     },
                     cases};
    return run_property(find, seed, cases, /*shrink=*/false);
  };
  const double replay0 = cpu_seconds();
  RunResult w = replay(/*skip=*/true);
  row["replay"] = w.passed ? "every case" : "the worst case only";
  if (w.passed) w = replay(/*skip=*/false);
  row["replay_cpu_seconds"] = cpu_seconds() - replay0;
  row["replay_found"] = found;
  if (!w.passed) {
    row["worst_case"] = w.message;
    row["reproduce"] = w.reproduce;
  }
  return row;
}

// "K/N" -> N (0 when malformed).
int shard_count(const std::string& s) {
  int k = 0, n = 0;
  return std::sscanf(s.c_str(), "%d/%d", &k, &n) == 2 ? n : 0;
}

json merge(const std::vector<std::string>& files) {
  json out = {{"shards", 0}, {"properties", json::array()}};
  std::vector<std::string> order;
  std::map<std::string, std::vector<json>> rows;
  std::map<std::string, std::string> seen;  // "property shard" or "property seed" -> file
  std::string first;                        // the file the others must agree with
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) throw std::runtime_error("--merge: cannot read " + f);
    json shard;
    try {
      shard = json::parse(in);
    } catch (const json::exception& e) {
      throw std::runtime_error("--merge: " + f + " is not JSON (" + e.what() + ")");
    }
    if (!shard.contains("provenance") || !shard["provenance"].contains("digest"))
      throw std::runtime_error("--merge: " + f +
                               " records no provenance (made by an older campaign program)");
    if (first.empty()) {
      first = f;
      out["seed"] = shard.at("seed");
      out["provenance"] = shard["provenance"];
    }
    if (shard["provenance"]["digest"] != out["provenance"]["digest"])
      throw std::runtime_error("--merge: " + f + " judged other sources than " + first +
                               " (source digests differ)");
    if (shard.at("seed") != out["seed"])
      throw std::runtime_error("--merge: " + f + " has campaign seed " + shard["seed"].dump() +
                               ", " + first + " has " + out["seed"].dump());
    for (const json& p : shard.at("properties")) {
      const std::string name = p.at("name");
      const std::string sh = p.value("shard", shard.value("shard", std::string()));
      const int n = shard_count(sh);
      if (n < 1) throw std::runtime_error("--merge: " + f + ": " + name + " names no shard K/N");
      if (out["shards"].get<int>() == 0) out["shards"] = n;
      if (out["shards"].get<int>() != n)
        throw std::runtime_error("--merge: " + f + ": shard " + sh + " of a campaign of " +
                                 out["shards"].dump() + " shards");
      for (const std::string key : {name + " shard " + sh, name + " seed " + p.at("seed").dump()}) {
        if (seen.count(key))
          throw std::runtime_error("--merge: " + key + " appears twice (" + seen[key] + ", " + f +
                                   "): the shards would overlap");
        seen[key] = f;
      }
      if (!rows.count(name)) order.push_back(name);
      json row = p;
      row["shard"] = sh;
      rows[name].push_back(row);
    }
  }
  bool complete = true;
  for (const auto& name : order) {
    json m = {{"name", name},
              {"cases", 0},
              {"discards", 0},
              {"failures", 0},
              {"seconds", 0.0},
              {"cpu_seconds", 0.0},
              {"worst_err_over_bound", nullptr},
              {"worst_case", nullptr},
              {"reproduce", nullptr}};
    const json* pick = nullptr;  // a failure first, else the largest worst_err_over_bound
    std::map<std::string, RatioHistogram> by_tag;
    for (const json& p : rows[name]) {
      const json tags = p.value("err_over_bound_by_tag", json::object());
      for (const auto& [tag, h] : tags.items()) by_tag[tag].add(histogram_of(h));
      m["cases"] = m["cases"].get<long>() + p.at("cases").get<long>();
      m["discards"] = m["discards"].get<long>() + p.at("discards").get<long>();
      m["failures"] = m["failures"].get<long>() + p.at("failures").get<long>();
      m["seconds"] = m["seconds"].get<double>() + p.at("seconds").get<double>();
      m["cpu_seconds"] = m["cpu_seconds"].get<double>() + p.value("cpu_seconds", 0.0);
      const bool failed = p.at("failures").get<long>() > 0;
      const bool pick_failed = pick && (*pick)["failures"].get<long>() > 0;
      if (failed && !pick_failed) {
        pick = &p;
      } else if (!pick_failed && !p.at("worst_err_over_bound").is_null() &&
                 (!pick || (*pick)["worst_err_over_bound"].is_null() ||
                  p["worst_err_over_bound"].get<double>() >
                      (*pick)["worst_err_over_bound"].get<double>())) {
        pick = &p;
      }
    }
    if (pick) {
      for (const char* k : {"worst_err_over_bound", "worst_case", "reproduce"}) m[k] = (*pick)[k];
    }
    m["err_over_bound_by_tag"] = json::object();
    for (const auto& [tag, h] : by_tag) m["err_over_bound_by_tag"][tag] = histogram_json(h);
    // Throughput of one core: total cases over the shards' summed time.
    const double sec = m["seconds"].get<double>();
    m["cases_per_s"] = sec > 0 ? m["cases"].get<double>() / sec : 0.0;
    m["shards"] = json::array();
    for (const json& p : rows[name])
      m["shards"].push_back({{"shard", p["shard"]}, {"seed", p["seed"]}, {"cases", p["cases"]}});
    complete = complete && rows[name].size() == out["shards"].get<std::size_t>();
    out["properties"].push_back(m);
  }
  // Every property has all N shards (run_campaign.sh merges after each property, so a
  // partial campaign says so).
  out["complete"] = complete;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pagedattn property campaign (property_tests/README.md)"};
  int cases = 1000;
  std::uint64_t seed = 1;
  std::string shard = "1/1", out_file, only;
  std::vector<std::string> merge_files;
  bool list = false;
  app.add_option("--cases", cases, "cases per property, over all shards")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "campaign seed");
  app.add_option("--shard", shard, "K/N: this shard (1 <= K <= N)");
  app.add_option("--out", out_file, "JSON summary to write (default: stdout)");
  app.add_option("--properties", only, "comma-separated property names (default: all)");
  app.add_option("--merge", merge_files,
                 "merge these shard summaries into --out instead of running");
  app.add_flag("--list", list, "print the property names");
  CLI11_PARSE(app, argc, argv);

  auto emit = [&](const json& j) {
    if (out_file.empty()) {
      std::cout << j.dump(2) << std::endl;
    } else {
      std::ofstream(out_file) << j.dump(2) << "\n";
    }
  };
  if (list) {
    for (const auto& d : registry()) std::cout << d.name << "\n";
    return 0;
  }
  if (!merge_files.empty()) {
    try {
      emit(merge(merge_files));
    } catch (const std::exception& e) {
      std::cerr << "pagedattn_prop_campaign: " << e.what() << std::endl;
      return 2;
    }
    return 0;
  }
  int k = 0, n = 0;
  if (std::sscanf(shard.c_str(), "%d/%d", &k, &n) != 2 || n < 1 || k < 1 || k > n) {
    std::cerr << "pagedattn_prop_campaign: --shard must be K/N with 1 <= K <= N, got \"" << shard
              << "\"" << std::endl;
    return 2;
  }
  std::vector<const PropertyDef*> defs;
  for (const auto& d : registry()) {
    if (only.empty() || ("," + only + ",").find("," + d.name + ",") != std::string::npos)
      defs.push_back(&d);
  }
  if (defs.empty()) {
    std::cerr << "pagedattn_prop_campaign: --properties names none of the properties (see --list)"
              << std::endl;
    return 2;
  }
  // Shard K takes cases/N (the first cases % N shards one more) under seeds no other
  // shard uses: mix(seed, K, property name) with K in the hash input.
  const int mine = cases / n + (k <= cases % n ? 1 : 0);
  json summary = {{"seed", seed},
                  {"shard", shard},
                  {"provenance", pagedattn::audit::provenance()},
                  {"properties", json::array()}};
  bool failed = false;
  for (std::size_t i = 0; i < defs.size(); ++i) {
    const std::uint64_t s =
        mix(mix(mix(seed) ^ static_cast<std::uint64_t>(k)) ^ name_hash(defs[i]->name));
    json row = run_one(*defs[i], s, mine, shard);
    failed = failed || row["failures"].get<int>() > 0;
    std::cerr << defs[i]->name << ": " << row["cases"] << " cases, " << row["failures"]
              << " failures, " << row["cases_per_s"] << " cases/s" << std::endl;
    summary["properties"].push_back(row);
  }
  emit(summary);
  return failed ? 1 : 0;
}
