// Everything sample() settles before it starts (internal to the sampler layer):
// resolve_options() fills every default from the store (resolve.cpp); plan_memory() splits
// the budget between the chains, the shared accumulators, the diagnostics and the readers
// (memory_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {

constexpr size_t kPassBatch = 4096;  // rows a piece of full passes and evaluations

Status resolve_options(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* out);
// After the preconditioner (which sets ld's step under diag): the underdamped dynamics' step
// and friction, their defaults (docs/samplers.md, "Dynamics") and their stability under the
// prior; for ld, that no friction was given.
Status resolve_dynamics(const SampleOptions& options, ResolvedSample* r);

// The readers' options (their shares apart).
ReaderOptions main_reader_options(const ResolvedSample& r);
ReaderOptions pass_reader_options(const Store& store, uint64_t seed);
// The seed of chain id's access order (one-chain runs of that id read the same sequence).
uint64_t stream_seed(uint64_t seed, uint64_t chain_id);

struct MemoryPlan {
  uint64_t baseline = 0;    // the process before the run (code, mappings, the CLI)
  uint64_t chain = 0;       // one chain's state and scratch
  uint64_t shared = 0;      // pooled moments, the predictive, the tracked draws
  uint64_t diagnostics = 0; // the online diagnostics' accumulators
  uint64_t main = 0, pass = 0, test = 0;  // reader shares (0: reader not opened)
  std::vector<uint64_t> diagnosed;        // ascending; empty: every coordinate
};

// The readers' shares of `readers` bytes, at least the sum of the minimums (a minimum of 0: a
// reader not opened). The test reader keeps its store whole (test_whole) if a quarter allows,
// never out of the training readers' minimums; the pass reader, which streams in stored order,
// gets twice its minimum beside a main reader, else everything; the main reader the rest.
struct ReaderShares {
  uint64_t main = 0, pass = 0, test = 0;
};
ReaderShares split_readers(uint64_t readers, uint64_t main_min, uint64_t pass_min, uint64_t test_min,
                           uint64_t test_whole);

// Fills r's memory figures and its diagnostics' coverage (diagnosed, diagnosed_rule).
Status plan_memory(const Store& train, const Store* test, ResolvedSample* r, const Snapshot& snap,
                   MemoryPlan* out);

}  // namespace agld::sampler
