// agld summary DIR [--json]: a stansummary-style table of a run's tracked coordinates (exact
// diagnostics from their draws) and the whole vector's online diagnostics. `agld sample`
// prints the same at the end of a run.
#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "agld/run_summary.hpp"
#include "cli_common.hpp"

namespace agld::cli {

namespace {

nlohmann::json summary_json(const RunSummary& s) {
  nlohmann::json columns = nlohmann::json::array();
  for (const ColumnSummary& c : s.columns) {
    columns.push_back({{"name", c.name}, {"mean", json_number(c.mean)}, {"mcse", json_number(c.mcse)}, {"sd", json_number(c.sd)},
                       {"q5", json_number(c.q5)}, {"q50", json_number(c.q50)}, {"q95", json_number(c.q95)},
                       {"ess_bulk", json_number(c.ess_bulk)}, {"ess_tail", json_number(c.ess_tail)}, {"rhat", json_number(c.rhat)}});
  }
  const VectorSummary& v = s.vector;
  return {{"dir", s.dir},
          {"method", s.method},
          {"model", s.model},
          {"chains", s.chains},
          {"chain_ids", {s.first_chain, s.first_chain + s.chains - 1}},
          {"draws_per_chain", s.draws},
          {"iterations", s.iterations},
          {"burn_in", s.burn_in},
          {"thin", s.thin},
          {"stopped_early", s.stopped_early},
          {"stages", s.stages ? nlohmann::json(s.stages) : nlohmann::json()},
          {"prior_exact", s.prior_exact},
          {"stop_reason", s.stages ? nlohmann::json(s.stop_reason) : nlohmann::json()},
          {"columns", columns},
          {"all_coordinates",
           {{"coordinates", v.dim},
            {"sampled", v.sampled},
            {"with_rhat", v.covered},
            {"max_rhat", json_number(v.max_rhat)},
            {"max_rhat_coordinate", v.max_rhat_name.empty() ? nlohmann::json() : nlohmann::json(v.max_rhat_name)},
            {"rhat_above_1_01", v.rhat_above},
            {"min_ess", json_number(v.min_ess)},
            {"min_ess_coordinate", v.min_ess_name.empty() ? nlohmann::json() : nlohmann::json(v.min_ess_name)},
            {"ess_below_100_a_chain", v.ess_below}}},
          {"by_rows", by_rows_json(s.by_rows)},
          {"rao_blackwell", s.rao_blackwell ? nlohmann::json{{"conditional_draws", s.rb_samples},
                                                              {"means", s.rb_means},
                                                              {"sds", s.rb_sds}}
                                            : nlohmann::json()},
          {"mixed", s.mixed}};
}

// A number in a column of width w: NaN as "NaN", large ESS without an exponent.
std::string cell(double v, int w) {
  if (std::isnan(v)) return fmt::format("{:>{}}", "NaN", w);
  return fmt::format("{:>{}.4g}", v, w);
}

struct SummaryArgs {
  std::string dir;
  bool json = false;
};

int run_summary(const SummaryArgs& a) {
  RunSummary s;
  const Status st = summarize_run(a.dir, FileSystem::local(), &s);
  if (!st.is_ok()) return fail(st);
  if (a.json) {
    const std::string text = summary_json(s).dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    const std::string text = summary_text(s);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return kExOk;
}

}  // namespace

std::string summary_text(const RunSummary& s) {
  fmt::memory_buffer b;
  auto out = std::back_inserter(b);
  fmt::format_to(out, "{} ({}): {} chains (ids {} to {}) x {} kept states{}; iterations {} (burn-in {}, thin {})\n\n",
                 s.method, s.model, s.chains, s.first_chain, s.first_chain + s.chains - 1, s.draws,
                 s.stopped_early ? " (stopped early)" : "", s.iterations, s.burn_in, s.thin);
  size_t name_w = 4;
  for (const ColumnSummary& c : s.columns) name_w = std::max(name_w, c.name.size());
  constexpr int w = 10;
  fmt::format_to(out, "{:<{}}", "", name_w);
  for (const char* h : {"Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat"}) {
    fmt::format_to(out, " {:>{}}", h, w);
  }
  fmt::format_to(out, "\n");
  for (const ColumnSummary& c : s.columns) {
    fmt::format_to(out, "{:<{}}", c.name, name_w);
    for (double v : {c.mean, c.mcse, c.sd, c.q5, c.q50, c.q95}) fmt::format_to(out, " {}", cell(v, w));
    fmt::format_to(out, " {:>{}} {:>{}} {}\n", std::isfinite(c.ess_bulk) ? fmt::format("{:.0f}", c.ess_bulk) : "NaN", w,
                   std::isfinite(c.ess_tail) ? fmt::format("{:.0f}", c.ess_tail) : "NaN", w, cell(c.rhat, w));
  }
  fmt::format_to(out, "\nTracked coordinates: rank-normalized split R-hat, bulk and tail ESS from the draws files "
                      "(as the R package posterior); lp__ is estimated from each iteration's minibatch.\n");
  const VectorSummary& v = s.vector;
  if (v.covered == 0) {
    fmt::format_to(out, "Every coordinate (diagnostics.npy): no R-hat computed ({} coordinates; too few kept states).\n", v.dim);
  } else {
    fmt::format_to(out,
                   "Every coordinate (diagnostics.npy: split R-hat and batch-means ESS, online): {} of {} with R-hat{}; "
                   "largest R-hat {:.4g} ({}), {} above 1.01; smallest ESS {:.0f} ({}), {} below 100 a chain.\n",
                   v.covered, v.dim, v.sampled ? " (a seeded sample and the tracked ones: config.json's diagnostics)" : "",
                   v.max_rhat, v.max_rhat_name, v.rhat_above, v.min_ess, v.min_ess_name, v.ess_below);
  }
  if (v.covered > 0 && !s.by_rows.empty()) {
    // Where the R-hats above 1.01 are, by the rows a feature is in (config.json's diagnostics.by_rows).
    fmt::format_to(out, "By the training rows a feature is in:\n{:>19} {:>12} {:>12} {:>12} {:>12} {:>10}  {}\n", "rows",
                   "coordinates", "with R-hat", "R-hat > 1.01", "R-hat > 1.1", "largest", "at");
    for (const RowsClassSummary& c : s.by_rows) {
      const std::string rows = c.intercept ? "intercept"
                               : c.min_rows == c.max_rows ? fmt::format("{}", c.min_rows)
                                                          : fmt::format("{}-{}", c.min_rows, c.max_rows);
      fmt::format_to(out, "{:>19} {:>12} {:>12} {:>12} {:>12} {}{}\n", rows, c.coordinates, c.with_rhat, c.rhat_above,
                     c.rhat_above_1_1, cell(c.max_rhat, 10), c.intercept ? "" : "  " + c.max_rhat_name);
    }
  }
  if (s.rao_blackwell) {
    fmt::format_to(out,
                   "posterior.npy: {} means and {} sds of {} from the coordinates' conditionals at {} conditional draws "
                   "(Rao-Blackwellized, where their Monte Carlo error is the smaller; for those means diagnostics.npy's "
                   "MCSE, R-hat and ESS are theirs), the others the kept draws' (docs/samplers.md, \"Rao-Blackwellized "
                   "moments\").\n",
                   s.rb_means, s.rb_sds, v.dim, s.rb_samples);
  }
  if (s.prior_exact > 0) {
    fmt::format_to(out, "{} coordinates are in no training row: their posterior is the prior, exactly (posterior.npy: mean 0, "
                        "sd sqrt(prior_var); no R-hat or ESS).\n",
                   s.prior_exact);
  }
  if (s.stages > 0) {
    fmt::format_to(out, "Until mixed: {} stage{}{}: {} (docs/samplers.md, \"Until mixed\").\n", s.stages,
                   s.stages == 1 ? "" : "s", s.stages == 1 ? "" : ", the draws are the last one's", s.stop_reason);
  }
  if (s.mixed) {
    fmt::format_to(out, "No R-hat above 1.01: the chains agree.\n");
  } else {
    fmt::format_to(out, "The chains have not mixed (an R-hat above 1.01, or none computed): the means and sds are not "
                        "yet the posterior's. See docs/samplers.md, \"When the chains have not mixed\".\n");
  }
  return {b.data(), b.size()};
}

void add_summary(Cli& cli) {
  auto a = std::make_shared<SummaryArgs>();
  CLI::App* c = cli.app.add_subcommand("summary", "Summarize a run directory: mean, MCSE, sd, quantiles, ESS and R-hat");
  c->add_option("dir", a->dir, "the run directory (agld sample --out)")->required();
  c->add_flag("--json", a->json, "print JSON");
  c->callback([&cli, a] { cli.exit_code = run_summary(*a); });
}

}  // namespace agld::cli
