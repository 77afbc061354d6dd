// How --memory is split (docs/samplers.md, "Memory"): the process as it stands, K chains'
// states, the accumulators the chains share (pooled moments, the predictive, the tracked
// draws), the readers' least shares; then the online diagnostics, over every coordinate if
// that leaves the readers room, else over a stated seeded sample; the readers get the rest.
#include <algorithm>
#include <cstdio>

#include "common/mix.hpp"
#include "common/proc.hpp"
#include "diagnostics/online_diagnostics.hpp"
#include "sampler/chain.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/moments.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/plan.hpp"
#include "sampler/predictive.hpp"

namespace agld::sampler {
namespace {

// m of the coordinates [0, d) drawn without replacement (Knuth's selection sampling, in
// ascending order), with the tracked ones added; seeded.
std::vector<uint64_t> seeded_sample(uint64_t d, uint64_t m, const std::vector<uint64_t>& tracked, uint64_t seed) {
  std::vector<uint64_t> out;
  out.reserve(m + tracked.size());
  uint64_t need = m;
  for (uint64_t j = 0; j < d && need > 0; ++j) {
    const double u = static_cast<double>(mix64(seed ^ mix64(j)) >> 11) * 0x1.0p-53;
    if (u * static_cast<double>(d - j) < static_cast<double>(need)) {
      out.push_back(j);
      --need;
    }
  }
  out.insert(out.end(), tracked.begin(), tracked.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

ReaderShares split_readers(uint64_t readers, uint64_t main_min, uint64_t pass_min, uint64_t test_min,
                           uint64_t test_whole) {
  ReaderShares s;
  if (test_min > 0) {  // the test set is read whole at every evaluation
    s.test = std::max(test_min, std::min({test_whole, readers / 4, readers - main_min - pass_min}));
    readers -= s.test;
  }
  if (main_min == 0) {
    s.pass = readers;
    return s;
  }
  if (pass_min > 0) s.pass = std::min(2 * pass_min, readers - main_min);
  s.main = readers - s.pass;
  return s;
}

namespace {

Status plan_layout(const Store& train, const Store* test, ResolvedSample* rp, const Snapshot& snap, MemoryPlan* out) {
  ResolvedSample& r = *rp;
  const bool in_record = r.stamps_in_record;
  const uint64_t d = r.dim, k = r.given.chains;
  const uint64_t test_rows = test ? test->meta().rows : 0;
  const StoreMeta& m = train.meta();
  const uint64_t avg_nnz = (m.nnz + m.rows - 1) / std::max<uint64_t>(m.rows, 1) + 1;
  MemoryPlan p;
  // A chain: its state, and its scratch (a batch's margins and coefficients, its support and
  // gradient, a pass piece's margins, its kept state's record).
  const uint64_t batch_nnz = snap.full_batch() ? 0 : r.batch * avg_nnz;
  const int state_dim = find_dynamics(r.dynamics)->state_dim;  // a momentum a coordinate counts
  p.chain = Chain::state_bytes(snap, d, state_dim, in_record) + Chain::dynamics_bytes(state_dim, r.precondition_levels) +
            (snap.full_batch() ? 0 : r.batch * 3 * 8) + batch_nnz * 12 +
            kPassBatch * 8 + r.track.size() * 8;
  // The gradient noise's correction (sampler/gradient_noise.hpp): its scratch (two numbers a
  // support slot) and, with a dense block of K, the block's sums and noise factor (3 K^2).
  if (r.noise_correction && !snap.full_batch()) p.chain += batch_nnz * 16 + 3 * r.metric_block * r.metric_block * 8;
  // Conditionals by quadrature: a chain's gathered rows and moments, and their shared layout.
  const bool rare = r.rao_blackwell && r.rao_blackwell_rare_rows > 0;
  if (rare) p.chain += RareRowCounts::chain_bytes(r.rao_blackwell_rare_coordinates, r.rao_blackwell_rare_pairs, r.gibbs);
  // Shared: the pooled moments, the predictive, every chain's kept lp__ and tracked values.
  // The predictive and the tracked draws grow with the chains: they count in what a chain costs.
  const uint64_t per_chain = p.chain + (r.track.size() + 1) * r.draws * 8 +
                             (Predictive::bytes(test_rows, 1) - Predictive::bytes(test_rows, 0));
  // The result's R-hat, ESS and MCSE (the mean and sd are the moments' own arrays) come when
  // the chains have gone (Engine::finish): what the chains' states do not free counts.
  const uint64_t result = 24 * d, freed = k * Chain::state_bytes(snap, d, state_dim, in_record);
  // diag's bit a coordinate: whether some row has it (Preconditioner::in_rows).
  const uint64_t in_rows = r.given.precondition == "diag" ? (d + 63) / 64 * 8 : 0;
  const uint64_t rb_coords = rare ? r.rao_blackwell_rare_coordinates : d;  // the accumulators' coordinates
  const uint64_t fixed = PooledMoments::bytes(d) + (r.rao_blackwell ? RaoBlackwell::bytes(rb_coords, k) : 0) +
                         (rare ? RareRowCounts::shared_bytes(d, r.rao_blackwell_rare_coordinates) : 0) +
                         Predictive::bytes(test_rows, 0) + (result > freed ? result - freed : 0) + in_rows;
  p.shared = fixed + k * (per_chain - p.chain);
  p.baseline = process_rss_bytes();
  const uint64_t budget = r.given.memory;
  const ReaderOptions main_opt = main_reader_options(r);
  const bool need_main = !snap.full_batch();
  const bool need_pass = snap.refresh_rows() == RefreshRows::kFullPass || snap.full_batch();
  const uint64_t main_min = need_main ? reader_min_memory(train, main_opt) : 0;
  const uint64_t pass_min = need_pass ? reader_min_memory(train, pass_reader_options(train, 0)) : 0;
  const uint64_t test_min = test ? reader_min_memory(*test, pass_reader_options(*test, 0)) : 0;
  const uint64_t readers_min = main_min + pass_min + test_min;
  const uint64_t need = p.baseline + fixed + k * per_chain + readers_min;
  if (budget < need) {
    const uint64_t rest = p.baseline + fixed + readers_min;
    const uint64_t fit = budget > rest ? (budget - rest) / per_chain : 0;
    return Status::invalid_argument(
        "--memory " + mib(budget) + " is too small for " + std::to_string(k) + " chain" + (k == 1 ? "" : "s") +
        " of " + r.snapshot + "-" + r.access + " on this store: a chain takes " + mib(per_chain) +
        ", what the chains share " + mib(fixed) + ", the readers at least " + mib(readers_min) + " and the process " +
        mib(p.baseline) + "; " +
        (fit == 0 ? std::string("not even one chain fits")
                  : std::to_string(fit) + " chain" + (fit == 1 ? "" : "s") + " would fit (--chains " + std::to_string(fit) + ")") +
        ", or give at least " + mib(need));
  }
  uint64_t left = budget - need;
  // The diagnostics: every coordinate if that takes at most half of what is left, or leaves
  // the readers enough to keep their stores whole; else a seeded sample in that half.
  const uint64_t per_coord = diagnostics::OnlineDiagnostics::bytes_per_coordinate(k);
  uint64_t readers_whole = 0;
  if (need_main) readers_whole += reader_whole_store_memory(train, main_opt);
  if (need_pass) readers_whole += reader_whole_store_memory(train, pass_reader_options(train, 0));
  if (test) readers_whole += reader_whole_store_memory(*test, pass_reader_options(*test, 0));
  const uint64_t all = d * per_coord;
  if (all <= left / 2 || (all <= left && left - all >= readers_whole)) {
    r.diagnosed = d;
    r.diagnosed_rule = "all";
    p.diagnostics = all;
  } else {
    const uint64_t fit = left / 2 / per_coord;
    const uint64_t sample = fit > r.track.size() ? fit - r.track.size() : 0;
    p.diagnosed = seeded_sample(d, sample, r.track, mix64(r.given.seed ^ 0xd1a9u));
    r.diagnosed = p.diagnosed.size();
    r.diagnosed_rule = "the tracked coordinates and a seeded uniform sample of " + std::to_string(r.diagnosed) +
                       " of the " + std::to_string(d) + " (all of them would take " + mib(all) +
                       " of --memory; " + mib(left) + " was left beside the chains and the readers)";
    p.diagnostics = r.diagnosed * per_coord;
  }
  left -= p.diagnostics;
  const ReaderShares shares =
      split_readers(readers_min + left, main_min, pass_min, test_min,
                    test ? reader_whole_store_memory(*test, pass_reader_options(*test, 0)) : 0);
  p.main = shares.main;
  p.pass = shares.pass;
  p.test = shares.test;
  if (r.random_for_order && need_main) {
    const uint64_t whole = reader_whole_store_memory(train, main_opt);
    if (p.main < whole) {
      // Out of core a random order reads a row or a chunk for each row (docs/readers.md,
      // "Which store suits which order"): thousands of rows a second. Say so rather than run
      // for days, or run a cyclic order that follows the stored order's trends. The budget
      // suggested covers the diagnostics of every coordinate and every reader's whole store,
      // which leaves the main reader its whole store whatever the split above.
      return Status::invalid_argument(
          "the rows of " + train.path() + " are in their source order (converted with --keep-order), where the "
          "default cyclic order would sample the wrong posterior if the order has a trend (time, a sorted column); "
          "the default is then " + r.method + ", a random order, which needs the decoded store in memory: the "
          "reader would get " + mib(p.main) + " and the store takes " + mib(whole) + ". Convert the store again "
          "without --keep-order (its rows are then shuffled and ptu-ca reads them fast), or give --memory " +
          std::to_string((need + all + readers_whole + (1 << 20) - 1) >> 20) + "M or more, or choose --method yourself: " + r.method +
          " (a random order, thousands of rows a second out of core) or ptu-ca (if the stored order has no trend)");
    }
  }
  r.chain_bytes = p.chain;
  r.state_bytes = k * p.chain + p.shared + p.diagnostics;
  r.reader_bytes = p.main ? p.main : p.pass;
  *out = std::move(p);
  return Status::ok();
}

}  // namespace

// The lazy state's faster layout (each stamp in its coordinate's record: one cache miss a
// touched coordinate) if the budget holds it, else the compact one (4 bytes a coordinate
// less); the compact plan's error if neither fits.
Status plan_memory(const Store& train, const Store* test, ResolvedSample* r, const Snapshot& snap, MemoryPlan* out) {
  ResolvedSample tried = *r;
  tried.stamps_in_record = true;
  if (plan_layout(train, test, &tried, snap, out).is_ok()) {
    *r = std::move(tried);
    return Status::ok();
  }
  r->stamps_in_record = false;
  return plan_layout(train, test, r, snap, out);
}

}  // namespace agld::sampler
