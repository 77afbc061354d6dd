// agld optimize --train STORE [--test STORE] --model logistic|linear --out DIR ...
// The posterior's mode (MAP) and a diagonal Laplace sd per coordinate, by preconditioned SVRG
// (docs/samplers.md, "The mode (`agld optimize`)"): DIR/mode.npy and DIR/config.json.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "agld/optimize.hpp"
#include "agld/options.hpp"
#include "agld/run_output.hpp"
#include "agld/store.hpp"
#include "agld/version.hpp"
#include "cli_common.hpp"
#include "option_cli.hpp"

namespace agld::cli {
namespace {

struct OptimizeArgs {
  OptimizeOptions opt;  // as given: the table's flags write into it (agld/options.hpp)
  std::string train, test, out;
  bool quiet = false;
};

nlohmann::json config_json(const OptimizeResult& res, const Store& train, const Store* test) {
  const ResolvedOptimize& r = res.run;
  const OptimizeOptions& o = r.given;
  nlohmann::json trace = nlohmann::json::array();
  for (const OptimizeEpoch& e : res.epochs) {
    trace.push_back({{"epoch", e.epoch},
                     {"passes", e.passes},
                     {"objective", json_number(e.objective)},
                     {"grad_norm", json_number(e.grad_norm)},
                     {"rel_grad_norm", json_number(e.rel_grad_norm)},
                     {"seconds", e.seconds},
                     {"bytes_read", e.bytes_read}});
  }
  const OptimizeEpoch& last = res.epochs.back();
  return {{"agld_version", kVersion},
          {"command", "optimize"},
          {"train", store_identity(train)},
          {"test", test ? store_identity(*test) : nlohmann::json()},
          {"model", o.model},
          {"noise_var", r.noise_var ? nlohmann::json(*r.noise_var) : nlohmann::json()},
          {"prior_var", std::isinf(o.prior_var) ? nlohmann::json("inf") : nlohmann::json(o.prior_var)},
          {"intercept", o.intercept},
          {"rows", r.rows},
          {"dim", r.dim},
          {"optimizer", "svrg"},
          {"precondition", o.precondition},
          {"preconditioner", preconditioner_json(o.precondition, r)},
          {"step", r.step},
          {"step_rule", r.step_rule},
          {"unseen_directions", r.unseen_directions},
          {"batch", r.batch},
          {"access", o.access},
          {"iterations_per_epoch", r.iterations_per_epoch},
          {"max_epochs", o.epochs},
          {"tol", o.tol},
          {"memory", o.memory},
          {"state_bytes", r.state_bytes},
          {"reader_bytes", r.reader_bytes},
          {"seed", o.seed},
          {"warnings", r.warnings},
          {"given", nlohmann::json::parse(options_json(o))},
          {"mode_npy", {{"shape", {r.dim, 2}},
                        {"columns", {"mode", "laplace_sd_conditional"}},
                        {"laplace_sd_conditional",
                         "1/sqrt(H_jj), H_jj = 1/prior_var + sum_i l''(y_i, x_i . mode) x_ij^2: the sd of coordinate j "
                         "given the others under the Laplace approximation, a lower bound on its marginal sd"}}},
          {"result", {{"stop_reason", res.stop_reason},
                      {"epochs", last.epoch},
                      {"passes", last.passes},
                      {"rows_read", res.rows_read},
                      {"grad_evals", res.grad_evals},
                      {"bytes_read", last.bytes_read},
                      {"objective", json_number(last.objective)},
                      {"grad_norm", json_number(last.grad_norm)},
                      {"grad_norm_start", json_number(res.epochs.front().grad_norm)},
                      {"rel_grad_norm", json_number(last.rel_grad_norm)},
                      {"seconds", res.seconds},
                      {"test", test ? nlohmann::json{{"loglik", json_number(res.test_loglik)},
                                                     {"accuracy", json_number(res.test_accuracy)},
                                                     {"mse", json_number(res.test_mse)},
                                                     {"at", "the mode (plug-in)"}}
                                    : nlohmann::json()}}},
          {"trace", trace}};
}

class CliOptimizeObserver final : public OptimizeObserver {
 public:
  explicit CliOptimizeObserver(bool progress) : progress_(progress) {}
  Status on_epoch(const OptimizeEpoch& e) override {
    if (progress_) {
      std::cerr << fmt::format("epoch {}: {:.2f} passes, objective {:.10g}, |grad|_M {:.4g} ({:.3g} of the start's), {:.2f} s\n",
                               e.epoch, e.passes, e.objective, e.grad_norm, e.rel_grad_norm, e.seconds);
    }
    return Status::ok();
  }
  bool stop_requested() override { return StopOnSignal::requested(); }

 private:
  bool progress_;
};

int run_optimize(OptimizeArgs& a) {
  OptimizeOptions& o = a.opt;
  std::unique_ptr<Store> train, test;
  Status st = Store::open(a.train, &train);
  if (!st.is_ok()) return fail(st);
  if (!a.test.empty()) {
    st = Store::open(a.test, &test);
    if (!st.is_ok()) return fail(st);
  }
  ResolvedOptimize resolved;
  st = resolve_optimize(*train, test.get(), o, &resolved);  // options checked before any output
  if (!st.is_ok()) return fail(st);
  for (const std::string& w : resolved.warnings) std::cerr << "agld: warning: " << w << "\n";
  std::unique_ptr<RunWriter> writer;
  st = RunWriter::create(a.out, FileSystem::local(), &writer);
  if (!st.is_ok()) return fail(st);
  CliOptimizeObserver obs(!a.quiet);
  std::optional<StopOnSignal> stop_on_signal(std::in_place);
  OptimizeResult res;
  st = optimize(*train, test.get(), o, obs, &res);
  if (!st.is_ok()) return fail(st);
  const nlohmann::json cfg = config_json(res, *train, test.get());
  st = writer->finish_tables({{"mode.npy", {&res.mode, &res.sd}}}, cfg.dump(2) + "\n");
  stop_on_signal.reset();
  if (!st.is_ok()) return fail(st);
  const OptimizeEpoch& last = res.epochs.back();
  if (res.stop_reason == "epochs") {
    std::cerr << fmt::format("agld: warning: not converged: after {} epochs |grad|_M is {:.3g} of the start's, above --tol {:g}; "
                             "the mode is approximate (more --epochs, or see docs/samplers.md, \"The mode\")\n",
                             last.epoch, last.rel_grad_norm, o.tol);
  }
  if (a.quiet) return kExOk;
  std::string line = fmt::format("mode of {} ({}, {} rows x {} coordinates): stopped by {} after {} epochs, {:.2f} passes read, "
                                 "|grad|_M {:.3g} of the start's; objective {:.10g}",
                                 train->path(), o.model, res.run.rows, res.run.dim, res.stop_reason, last.epoch, last.passes,
                                 last.rel_grad_norm, last.objective);
  if (test) {
    line += fmt::format("; test at the mode: log-likelihood {:.6g}", res.test_loglik);
    if (std::isfinite(res.test_accuracy)) line += fmt::format(", accuracy {:.4f}", res.test_accuracy);
    if (std::isfinite(res.test_mse)) line += fmt::format(", MSE {:.6g}", res.test_mse);
  }
  line += fmt::format("; {:.2f} s; step {:.4g}; {}/mode.npy\n", res.seconds, res.run.step, a.out);
  std::fwrite(line.data(), 1, line.size(), stdout);
  return kExOk;
}

}  // namespace

void add_optimize(Cli& cli) {
  auto a = std::make_shared<OptimizeArgs>();
  CLI::App* c = cli.app.add_subcommand(
      "optimize", "The posterior's mode (MAP) and a diagonal Laplace sd per coordinate, by preconditioned SVRG");
  c->add_option("--train", a->train, "the training store")->required();
  c->add_option("--test", a->test, "a held-out store: the test metrics at the mode");
  c->add_option("--out", a->out, "the output directory: mode.npy and config.json (created if missing)")->required();
  add_option_flags(c, &a->opt, optimize_option_fields(), unit_help_tails());
  c->add_flag("-q,--quiet", a->quiet, "no line per epoch and no summary");
  c->callback([&cli, a] { cli.exit_code = run_optimize(*a); });
}

}  // namespace agld::cli
