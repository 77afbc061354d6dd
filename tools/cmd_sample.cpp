// agld sample --train STORE [--test STORE] --model logistic|linear --method M --out DIR ...
// Samples the posterior and writes the run directory (docs/samplers.md).
#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "agld/checkpoint.hpp"
#include "agld/options.hpp"
#include "agld/run_output.hpp"
#include "agld/run_summary.hpp"
#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "agld/version.hpp"
#include "cli_common.hpp"
#include "option_cli.hpp"

namespace agld::cli {
namespace {

struct SampleArgs {
  SampleOptions opt;  // as given: the table's flags write into it (agld/options.hpp)
  std::string train, test, out;
  std::vector<std::string> track;
  bool quiet = false;
  std::string checkpoint_every = "10m";
  std::string resume;  // a run directory whose checkpoint to continue
  CLI::App* app = nullptr;
};

// The run directory's checkpoint (docs/reliability.md).
std::string checkpoint_path(const std::string& dir) { return dir + "/" + RunWriter::kCheckpointFile; }

// A run stopped by a failed write (a full disk): its last checkpoint, if it has one, is
// whole (a checkpoint replaces the previous one only once complete), and continues it.
Status with_resume_hint(const Status& st, const std::string& dir) {
  std::error_code ec;
  if (st.code() != Status::Code::kIOError || !std::filesystem::exists(checkpoint_path(dir), ec)) return st;
  return Status::io_error(st.message() + "; the run stopped, its last checkpoint is kept: agld sample --resume " + dir +
                          " continues it");
}

// "10m", "90s", "1.5h", "30" (seconds); "0" or "off": none. Throws CLI::ValidationError.
double parse_duration(const std::string& text) {
  if (text == "off") return 0;
  size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
  }
  const std::string unit = pos ? text.substr(pos) : "?";
  const double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (!(v >= 0) || !std::isfinite(v) || mult < 0) {
    throw CLI::ValidationError("duration", "expected a duration such as 10m, 90s or 1.5h, or off, got '" + text + "'");
  }
  return v * mult;
}

nlohmann::json draws_files(const ResolvedSample& r);

// given: the options as given (a resumed run's: the checkpoint's, and those given again).
nlohmann::json config_json(const SampleOptions& given, const ResolvedSample& r, const Store& train, const Store* test) {
  const SampleOptions& o = r.given;
  nlohmann::json track = nlohmann::json::array();
  for (const std::string& n : tracked_names(r)) track.push_back(n);
  return {{"agld_version", kVersion},
          {"train", store_identity(train)},
          {"test", test ? store_identity(*test) : nlohmann::json()},
          {"model", o.model},
          {"noise_var", r.noise_var ? nlohmann::json(*r.noise_var) : nlohmann::json()},
          {"prior_var", std::isinf(o.prior_var) ? nlohmann::json("inf") : nlohmann::json(o.prior_var)},
          {"intercept", o.intercept},
          {"method", r.method},
          {"method_rule", r.method_rule},
          {"snapshot", r.snapshot},
          {"access", r.access},
          {"dynamics", r.dynamics},
          {"chains", o.chains},
          {"chain_id", o.chain_id},
          {"draws_files", draws_files(r)},
          {"batches", r.own_streams && o.chains > 1 ? "each chain its own sequence" : "shared by every chain"},
          {"share_batches", o.share_batches},
          {"threads", o.threads ? nlohmann::json(o.threads) : nlohmann::json("all cores")},
          {"rows", r.rows},
          {"dim", r.dim},
          {"step", r.step},
          {"step_rule", r.step_rule},
          {"friction", r.underdamped ? nlohmann::json(r.friction) : nlohmann::json()},
          {"friction_rule", r.underdamped ? nlohmann::json(r.friction_rule) : nlohmann::json()},
          {"precondition", o.precondition},
          {"metric", o.metric.empty() ? nlohmann::json() : nlohmann::json(o.metric)},
          {"init", o.init.empty() ? nlohmann::json() : nlohmann::json(o.init)},
          {"preconditioner", preconditioner_json(o.precondition, r)},
          {"rao_blackwell", {{"asked", o.rao_blackwell},
                             {"on", r.rao_blackwell},
                             {"rule", r.rao_blackwell_rule},
                             {"refreshes_per_chain", r.rao_blackwell_refreshes}}},
          {"gibbs", {{"asked", o.gibbs}, {"on", r.gibbs}, {"rule", r.gibbs_rule}}},
          {"unseen", {{"asked", o.unseen},
                      {"directions", r.unseen_directions},
                      {"fields", r.unseen_fields},
                      {"rule", r.unseen_rule}}},
          {"noise_correction", {{"asked", o.noise_correction}, {"on", r.noise_correction}, {"rule", r.noise_correction_rule}}},
          {"batch", r.batch},
          {"iterations", r.iterations},
          {"epochs", r.epochs},
          {"length_rule", r.length_rule},
          {"until_mixed", {{"asked", o.until_mixed},
                           {"on", r.until_mixed},
                           {"rule", r.until_mixed_rule},
                           {"target_rhat", r.target_rhat},
                           {"target_ess", r.target_ess},
                           {"max_passes", o.max_passes ? nlohmann::json(*o.max_passes) : nlohmann::json()}}},
          {"burn_in", r.burn_in},
          {"thin", r.thin},
          {"draws_per_chain", r.draws},
          {"refresh", r.refresh},
          {"snapshot_batch", r.refresh_subsample ? nlohmann::json(r.snapshot_batch) : nlohmann::json()},
          {"eval_every", r.eval_every},
          {"evaluations", o.evaluations},
          {"memory", o.memory},
          {"state_bytes", r.state_bytes},
          {"chain_bytes", r.chain_bytes},
          {"reader_bytes", r.reader_bytes},
          {"seed", o.seed},
          {"track", track},
          {"dense", o.dense},
          {"time_limit", o.time_limit ? nlohmann::json(*o.time_limit) : nlohmann::json()},
          {"warnings", r.warnings},
          {"given", nlohmann::json::parse(options_json(given))}};
}

nlohmann::json draws_files(const ResolvedSample& r) {
  nlohmann::json files = nlohmann::json::array();
  for (uint64_t c = 0; c < r.given.chains; ++c) files.push_back(draws_file_name(r.given.chain_id + c));
  return files;
}

std::string name_of(const ResolvedSample& r, uint64_t j) { return coordinate_name(j, r.dim, r.given.intercept); }

// lp__ and every tracked coordinate: the exact diagnostics from their kept draws.
std::vector<ColumnSummary> tracked_columns(const SampleResult& res) {
  std::vector<std::string> names = tracked_names(res.run);
  names.insert(names.begin(), "lp__");
  std::vector<ColumnSummary> out;
  for (size_t t = 0; t < names.size() && t < res.tracked_draws.size(); ++t) {
    out.push_back(summarize_column(names[t], res.tracked_draws[t], res.run.given.chains));
  }
  return out;
}

// The tracked column with the largest finite R-hat (null when none is finite), and how many exceed 1.01.
const ColumnSummary* worst_column(const std::vector<ColumnSummary>& cols, uint64_t* above) {
  const ColumnSummary* worst = nullptr;
  *above = 0;
  for (const ColumnSummary& c : cols) {
    if (!std::isfinite(c.rhat)) continue;
    if (c.rhat > kRhatLimit) ++*above;
    if (!worst || c.rhat > worst->rhat) worst = &c;
  }
  return worst;
}

// What the diagnostics say, for config.json: the whole vector's (online) and the tracked columns' (exact).
nlohmann::json diagnostics_json(const SampleResult& res, const std::vector<ColumnSummary>& cols) {
  const ResolvedSample& r = res.run;
  const DiagnosticsSummary& s = res.diagnostics;
  uint64_t above = 0;
  const ColumnSummary* worst = worst_column(cols, &above);
  std::vector<RowsClassSummary> by_rows;
  for (const RowsClass& c : res.by_rows) by_rows.push_back(rows_class_summary(c, r.dim, r.given.intercept));
  return {{"coordinates", r.diagnosed_rule},
          {"covered", s.covered},
          {"rhat_finite", s.finite},
          {"max_rhat", json_number(s.max_rhat)},
          {"max_rhat_coordinate", std::isfinite(s.max_rhat) ? nlohmann::json(name_of(r, s.max_rhat_at)) : nlohmann::json()},
          {"rhat_above_1_01", s.rhat_above},
          {"min_ess", json_number(s.min_ess)},
          {"min_ess_coordinate", std::isfinite(s.min_ess) ? nlohmann::json(name_of(r, s.min_ess_at)) : nlohmann::json()},
          {"tracked", {{"rank_normalized_max_rhat", worst ? json_number(worst->rhat) : nlohmann::json()},
                       {"max_rhat_column", worst ? nlohmann::json(worst->name) : nlohmann::json()},
                       {"rhat_above_1_01", above}}},
          {"by_rows", by_rows_json(by_rows)},
          {"mixed", chains_mixed(s.finite, s.rhat_above, cols)}};
}

void draw_progress(const Progress& p) {
  const double frac = static_cast<double>(p.iteration) / static_cast<double>(std::max<uint64_t>(p.iterations, 1));
  std::string line = fmt::format(
      "\rpass {:.2f}, iteration {}/{}: {:.3g} it/s, {:.3g} rows/s, {:.0f} MB/s read, memory {} of {}",
      p.passes, p.iteration, p.iterations, static_cast<double>(p.iteration) / p.seconds,
      static_cast<double>(p.rows) / p.seconds, static_cast<double>(p.bytes_read) / 1e6 / p.seconds,
      human_bytes(static_cast<double>(p.memory_bytes)), human_bytes(static_cast<double>(p.memory_budget)));
  if (p.test_loglik) line += fmt::format(", test loglik {:.5g}", *p.test_loglik);
  line += fmt::format(", ETA {}", human_duration(p.seconds * (1 - frac) / std::max(frac, 1e-9)));
  std::cerr << line << "\033[K" << std::flush;
}

// The default checkpoint interval is at least this many times the last checkpoint's writing time.
constexpr double kCheckpointCostRatio = 20;

class CliSampleObserver final : public SampleObserver {
 public:
  // bounded_cost: the default interval, stretched so that writing checkpoints takes at most
  // 1 / kCheckpointCostRatio of the run (at d = 54.7M one takes about a minute).
  CliSampleObserver(RunWriter& w, bool progress, bool quiet, double checkpoint_every, bool bounded_cost)
      : w_(w), progress_(progress), quiet_(quiet), every_(checkpoint_every), bounded_cost_(bounded_cost),
        last_(std::chrono::steady_clock::now()) {
    // A test hook: the process dies (SIGKILL) right after its N-th checkpoint is in place.
    if (const char* n = std::getenv("AGLD_TEST_KILL_AFTER_CHECKPOINT")) kill_after_ = std::strtoull(n, nullptr, 10);
  }
  Status on_start(const ResolvedSample& run) override { return w_.start(run, comments(run)); }
  Status on_stage(const ResolvedSample& run) override {
    if (!quiet_) {
      if (progress_) std::cerr << "\r\033[K";
      std::cerr << fmt::format("agld: not mixed after {} iterations: going on to {} (stage {}; the draws so far are burn-in)\n",
                               run.burn_in, run.iterations, run.stage);
    }
    return w_.open_draws(run, comments(run));
  }
  // The draws files' head comments.
  static std::vector<std::string> comments(const ResolvedSample& run) {
    std::vector<std::string> comments = {
        fmt::format("agld {} sample", kVersion),
        fmt::format("model = {}, prior_var = {}, intercept = {}", run.given.model,
                    run.given.prior_var, run.given.intercept ? "yes" : "no"),
        fmt::format("method = {} (snapshot {}, access {}, dynamics {}), chains = {} (ids {} to {}), batches {}",
                    run.method, run.snapshot, run.access, run.dynamics, run.given.chains, run.given.chain_id,
                    run.given.chain_id + run.given.chains - 1,
                    run.own_streams && run.given.chains > 1 ? "each chain's own" : "shared"),
        fmt::format("precondition = {}", run.given.precondition),
        fmt::format("step = {:.9g} ({}){}, batch = {}, iterations = {}, burn_in = {}, thin = {}, refresh = {}",
                    run.step, run.step_rule,
                    run.underdamped ? fmt::format(", friction = {:.9g} ({})", run.friction, run.friction_rule)
                                    : std::string(),
                    run.batch, run.iterations, run.burn_in, run.thin, run.refresh),
        fmt::format("seed = {}, rows = {}, dim = {}", run.given.seed, run.rows, run.dim),
        fmt::format("unseen directions = {} ({})", run.unseen_directions, run.unseen_rule),
        fmt::format("noise correction: {}", run.noise_correction_rule),
        fmt::format("until mixed: {}{}", run.until_mixed_rule,
                    run.until_mixed ? fmt::format("; stage {}", run.stage) : std::string()),
        "lp__ is -U(theta) estimated from the iteration's minibatch (exact for lmc)"};
    return comments;
  }
  Status on_draw(const DrawRecord& d) override { return w_.draw(d); }
  Status on_eval(const EvalRecord& e) override { return w_.eval(e); }
  void on_progress(const Progress& p) override {
    if (progress_) draw_progress(p);
  }
  bool stop_requested() override { return StopOnSignal::requested(); }

  // Every checkpoint_every seconds (by default at least kCheckpointCostRatio times the last
  // checkpoint's writing time), and at the end of burn-in.
  bool checkpoint_due(uint64_t, bool burn_in_ended) override {
    if (every_ <= 0) return false;
    const double interval = bounded_cost_ ? std::max(every_, kCheckpointCostRatio * last_cost_) : every_;
    return burn_in_ended || std::chrono::duration<double>(std::chrono::steady_clock::now() - last_).count() >= interval;
  }
  // Written to a temporary file, synced, then renamed over the previous one: a kill at any
  // moment leaves the previous checkpoint or this one, whole; a failed write (a full disk)
  // stops the run and leaves the previous one.
  Status on_checkpoint(uint64_t iteration, const std::function<Status(WritableFile&)>& save) override {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t bytes = 0;
    Status st = w_.checkpoint(save, &bytes);  // names the file on failure
    if (!st.is_ok()) return st;
    last_ = std::chrono::steady_clock::now();
    last_cost_ = std::chrono::duration<double>(last_ - t0).count();
    ++written_;
    if (!quiet_) {
      if (progress_) std::cerr << "\r\033[K";
      std::cerr << fmt::format("agld: checkpoint at iteration {}: {} in {:.2f} s\n", iteration,
                               human_bytes(static_cast<double>(bytes)),
                               std::chrono::duration<double>(last_ - t0).count());
    }
    if (kill_after_ && written_ == kill_after_) ::kill(::getpid(), SIGKILL);
    return Status::ok();
  }

 private:
  RunWriter& w_;
  bool progress_, quiet_;
  double every_;
  bool bounded_cost_;
  double last_cost_ = 0;  // seconds the last checkpoint took to write
  std::chrono::steady_clock::time_point last_;
  uint64_t written_ = 0, kill_after_ = 0;
};

// "3,7,intercept" or "1-10" -> 0-based coordinates (1-based feature numbers on the line).
Status parse_track(const std::vector<std::string>& items, const Store& train, bool intercept,
                   std::vector<uint64_t>* out) {
  for (const std::string& item : items) {
    if (item == "intercept") {
      if (!intercept) return Status::invalid_argument("--track intercept needs --intercept");
      out->push_back(train.meta().features);
      continue;
    }
    uint64_t a = 0, b = 0;
    char dash = 0;
    std::istringstream in(item);
    if (!(in >> a) || a == 0) return Status::invalid_argument("--track: expected 1-based feature numbers, ranges A-B or 'intercept', found '" + item + "'");
    b = a;
    if (in >> dash) {
      if (dash != '-' || !(in >> b) || b < a) return Status::invalid_argument("--track: bad range '" + item + "'");
    }
    for (uint64_t j = a; j <= b; ++j) out->push_back(j - 1);
  }
  return Status::ok();
}

// --resume DIR: the options are the checkpoint's; those given on the command line too must
// be the same (resume_sample checks them, naming the first that differs), apart from the
// resumable ones (--threads, --time-limit).
Status resume_options(SampleArgs& a, const CheckpointInfo& info) {
  const SampleOptions given = a.opt;
  a.opt = info.options;
  take_given_options(*a.app, given, sample_option_fields(), &a.opt);
  if (a.train.empty()) a.train = info.train;
  if (a.test.empty() && a.app->count("--test") == 0) a.test = info.test;
  if (!a.out.empty() && std::filesystem::path(a.out).lexically_normal() != std::filesystem::path(a.resume).lexically_normal()) {
    return Status::invalid_argument("--out " + a.out + " with --resume " + a.resume + ": a run resumes in its own directory");
  }
  a.out = a.resume;
  return Status::ok();
}

int run_sample(SampleArgs& a) {
  SampleOptions& o = a.opt;
  const double checkpoint_every = parse_duration(a.checkpoint_every);
  std::unique_ptr<ReadableFile> checkpoint;
  if (!a.resume.empty()) {
    CheckpointInfo info;
    Status st = FileSystem::local().open_readable(checkpoint_path(a.resume), &checkpoint);
    if (st.code() == Status::Code::kNotFound) {
      st = Status::not_found(a.resume + " has no checkpoint to resume from (" + checkpoint_path(a.resume) +
                             "): the run finished, or never reached its first checkpoint");
    }
    if (st.is_ok()) st = read_checkpoint_info(*checkpoint, &info);
    if (st.is_ok()) st = resume_options(a, info);
    if (!st.is_ok()) return fail(st);
    if (a.app->count("--track") > 0) {
      return fail(Status::invalid_argument("--track with --resume: the run tracks what it tracked when it started"));
    }
  } else if (a.train.empty() || a.out.empty()) {
    return fail(Status::invalid_argument("--train and --out are required (or --resume DIR)"));
  } else if (std::filesystem::exists(checkpoint_path(a.out))) {
    return fail(Status::invalid_argument(a.out + " holds the checkpoint of an unfinished run: continue it with --resume " +
                                         a.out + ", or remove " + checkpoint_path(a.out)));
  }
  std::unique_ptr<Store> train, test;
  Status st = Store::open(a.train, &train);
  if (!st.is_ok()) return fail(st);
  if (!a.test.empty()) {
    st = Store::open(a.test, &test);
    if (!st.is_ok()) return fail(st);
  }
  if (!a.track.empty() && a.resume.empty()) {
    o.track_default = false;
    st = parse_track(a.track, *train, o.intercept, &o.track);
    if (!st.is_ok()) return fail(st);
  }
  ResolvedSample resolved;
  st = resolve_sample(*train, test.get(), o, &resolved);  // options checked before any output
  if (!st.is_ok()) return fail(st);
  if (a.resume.empty()) {
    for (const std::string& w : resolved.warnings) std::cerr << "agld: warning: " << w << "\n";
  }
  std::unique_ptr<RunWriter> writer;
  st = RunWriter::create(a.out, FileSystem::local(), &writer);
  if (!st.is_ok()) return fail(st);
  const bool progress = !a.quiet && stderr_is_tty();
  CliSampleObserver obs(*writer, progress, a.quiet, checkpoint_every, a.app->count("--checkpoint-every") == 0);
  std::optional<StopOnSignal> stop_on_signal(std::in_place);
  SampleResult result;
  st = checkpoint ? resume_sample(*train, test.get(), o, *checkpoint, obs, &result)
                  : sample(*train, test.get(), o, obs, &result);
  checkpoint.reset();
  if (progress) std::cerr << "\r\033[K" << std::flush;
  if (!st.is_ok()) return fail(with_resume_hint(st, a.out));
  nlohmann::json cfg = config_json(o, result.run, *train, test.get());
  cfg["result"] = {{"draws", result.draws},
                   {"seconds", result.seconds},
                   {"stopped_early", result.stopped_early},
                   {"stages", result.run.stage + 1},
                   {"prior_exact", result.prior_exact},
                   {"stop_reason", result.stop_reason},
                   {"least_noise_share", result.run.least_noise_share},
                   {"block_step", result.run.block_step},
                   {"stage_verdicts", result.stage_verdicts}};
  if (result.run.rao_blackwell) {
    cfg["result"]["rao_blackwell"] = {{"conditional_draws", result.rb_samples},
                                      {"means", result.rb_means},
                                      {"sds", result.rb_sds}};
  }
  if (result.run.gibbs) {
    cfg["result"]["gibbs"] = {
        {"proposed", result.sweep_proposed},
        {"accepted", result.sweep_accepted},
        {"acceptance",  // null (0 / 0) where no sweep ran
         json_number(static_cast<double>(result.sweep_accepted) / static_cast<double>(result.sweep_proposed))}};
  }
  const std::vector<ColumnSummary> tracked = tracked_columns(result);
  cfg["diagnostics"] = diagnostics_json(result, tracked);
  st = writer->finish(result, cfg.dump(2) + "\n");
  stop_on_signal.reset();
  if (!st.is_ok()) return fail(with_resume_hint(st, a.out));
  // The run is complete: its checkpoint has nothing left to continue.
  std::error_code ec;
  std::filesystem::remove(checkpoint_path(a.out), ec);
  const DiagnosticsSummary& ds = result.diagnostics;
  const ResolvedSample& r = result.run;
  uint64_t tracked_above = 0;
  const ColumnSummary* worst = worst_column(tracked, &tracked_above);
  if (ds.finite == 0 && !worst) {
    std::cerr << "agld: warning: too few kept states for diagnostics (R-hat and ESS need at least 4 a chain)\n";
  } else if (!chains_mixed(ds.finite, ds.rhat_above, tracked)) {
    std::string where;
    if (ds.rhat_above > 0) {
      where = fmt::format("for {} of {} coordinates (largest {:.4g}, {})", ds.rhat_above, ds.finite, ds.max_rhat,
                          name_of(r, ds.max_rhat_at));
    }
    if (tracked_above > 0) {
      where += fmt::format("{}for {} of the tracked columns (rank-normalized, largest {:.4g}, {})",
                           where.empty() ? "" : " and ", tracked_above, worst->rhat, worst->name);
    }
    const std::string rb =
        result.rb_means > 0
            ? fmt::format(" (for the {} means posterior.npy takes from the coordinates' conditionals, the R-hat of the "
                          "chains' conditional means)",
                          result.rb_means)
            : "";
    std::cerr << "agld: warning: the chains have not mixed: R-hat exceeds 1.01 " << where << rb
              << "; their means and sds are not yet the posterior's"
              << (r.until_mixed ? fmt::format(" ({}; a larger --max-passes lets it go on)", result.stop_reason)
                                : std::string(". Try a longer run (--epochs, or --until-mixed on)"))
              << "; see agld summary " << a.out << " and docs/samplers.md, \"When the chains have not mixed\"\n";
  }
  if (r.until_mixed && std::isfinite(ds.min_ess) && ds.min_ess < r.target_ess && chains_mixed(ds.finite, ds.rhat_above, tracked)) {
    std::cerr << fmt::format("agld: warning: the smallest ESS is {:.4g} ({}), below --target-ess {:g}: the chains agree, "
                             "but the means' Monte Carlo error is larger than the target asks ({})\n",
                             ds.min_ess, name_of(r, ds.min_ess_at), r.target_ess, result.stop_reason);
  }
  if (r.noise_correction && r.least_noise_share <= kLeastNoiseShare) {
    std::cerr << fmt::format(
        "agld: warning: the minibatch gradient's noise exceeds what the dynamics should inject on some level of M "
        "or direction of the dense block (its least share kept: {:g}): sds there may be too wide; a larger --batch "
        "or a smaller --step lowers it (docs/samplers.md, \"Gradient noise\")\n",
        r.least_noise_share);
  }
  if (a.quiet) return kExOk;

  // The summary: what ran, then agld summary's table of the run directory, the test metrics, the time.
  RunSummary summary;
  st = summarize_run(a.out, FileSystem::local(), &summary);
  if (!st.is_ok()) return fail(st);
  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b), "{} on {}: {} {} rows x {} coordinates, {} chains x {} iterations ({:.3g} passes read)\n",
                 r.method, train->path(), r.given.model, r.rows, r.dim, r.given.chains, r.iterations,
                 result.last_eval ? result.last_eval->passes : 0.0);
  const std::string table = summary_text(summary);
  b.append(table.data(), table.data() + table.size());
  if (result.last_eval && !std::isnan(result.last_eval->test_loglik)) {
    const EvalRecord& e = *result.last_eval;
    fmt::format_to(std::back_inserter(b), "test: average log-likelihood {:.6g} over {} states of each chain", e.test_loglik, e.samples);
    if (!std::isnan(e.test_accuracy)) fmt::format_to(std::back_inserter(b), ", accuracy {:.4f}", e.test_accuracy);
    if (!std::isnan(e.test_mse)) fmt::format_to(std::back_inserter(b), ", MSE {:.6g}", e.test_mse);
    fmt::format_to(std::back_inserter(b), "\n");
  }
  fmt::format_to(std::back_inserter(b), "time: {:.2f} s; step {:.4g}; run directory {}\n", result.seconds, r.step, a.out);
  std::fwrite(b.data(), 1, b.size(), stdout);
  return kExOk;
}

}  // namespace

void add_sample(Cli& cli) {
  auto a = std::make_shared<SampleArgs>();
  CLI::App* c = cli.app.add_subcommand("sample", "Sample the posterior of a GLM from a store");
  a->app = c;
  c->add_option("--train", a->train, "the training store (required unless --resume)");
  c->add_option("--test", a->test, "a held-out store for the test metrics");
  c->add_option("--out", a->out, "the run directory (created if missing; required unless --resume)");
  c->add_option("--checkpoint-every", a->checkpoint_every,
                "save the sampler's state to OUT/checkpoint this often (and at the end of burn-in): 10m, 90s, 1.5h; 0 or off: never. "
                "Default 10m, or 20 times the last checkpoint's writing time if that is longer (at most 5 % of the run)")
      ->default_val("10m")
      ->check(CLI::Validator([](std::string& v) {
        try {
          parse_duration(v);
        } catch (const CLI::ValidationError& e) {
          return std::string(e.what());
        }
        return std::string();
      }, "DURATION"));
  c->add_option("--resume", a->resume,
                "continue the killed run in directory DIR from its checkpoint (its options are the checkpoint's; only --threads, --time-limit, --max-passes, --checkpoint-every and -q may change)");
  add_option_flags(c, &a->opt, sample_option_fields(), unit_help_tails());
  c->add_option("--track", a->track, "coordinates for the draws files: 1-based feature numbers, ranges A-B, 'intercept' (default: the first 10 and the intercept)")
      ->delimiter(',');
  c->add_flag("-q,--quiet", a->quiet, "no progress line and no summary");
  c->callback([&cli, a] { cli.exit_code = run_sample(*a); });
}

}  // namespace agld::cli
