// agld gen: a synthetic LIBSVM file drawn from a planted GLM. A thin layer over
// agld::generate (include/agld/gen.hpp); docs/gen.md describes the data.
#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include "agld/gen.hpp"
#include "cli_common.hpp"

namespace agld::cli {
namespace {

struct GenArgs {
  GenOptions options;
  bool quiet = false;
};

int run_gen(const GenArgs& args) {
  GenOptions opt = args.options;
  // No progress line over rows being printed to the same terminal.
  const bool rows_to_tty = opt.output == "-" && ::isatty(STDOUT_FILENO) != 0;
  const bool show_progress = !args.quiet && stderr_is_tty() && !rows_to_tty;
  bool drew = false;
  if (show_progress) {
    auto last = std::make_shared<double>(-1);
    opt.progress = [last, &drew](const GenProgress& p) {
      if (p.seconds - *last < 0.25 && p.rows < p.rows_total) return;
      *last = p.seconds;
      double rate = p.seconds > 0 ? static_cast<double>(p.text_bytes) / p.seconds : 0;
      std::cerr << fmt::format(
                       "\r\033[Kagld gen: {} / {} rows ({:.0f}%), {}, {}/s", p.rows, p.rows_total,
                       100.0 * static_cast<double>(p.rows) / static_cast<double>(p.rows_total),
                       human_bytes(static_cast<double>(p.text_bytes)), human_bytes(rate))
                << std::flush;
      drew = true;
    };
  }
  GenReport r;
  Status s = generate(opt, &r);
  if (drew) std::cerr << "\r\033[K" << std::flush;
  if (!s.is_ok()) return fail(s);
  if (args.quiet) return kExOk;

  std::string what = opt.shape + ", " + opt.task;
  if (opt.task == "binary") {
    what += fmt::format(", {:.2f}% positive",
                        100.0 * static_cast<double>(r.positives) / static_cast<double>(r.rows));
  }
  std::string where = r.output == "-" ? "stdout" : r.output;
  std::string size = human_bytes(static_cast<double>(r.text_bytes));
  if (r.output_bytes != r.text_bytes) {
    size += " (" + human_bytes(static_cast<double>(r.output_bytes)) + " compressed)";
  }
  std::string weights =
      r.weights.empty() ? ""
                        : fmt::format(", weights of {} features -> {}", r.features_used, r.weights);
  std::cerr << fmt::format("agld gen: {} rows ({}), {} -> {}{} in {}", r.rows, what, size, where,
                           weights, human_duration(r.seconds))
            << std::endl;
  return kExOk;
}

}  // namespace

void add_gen(Cli& cli) {
  auto args = std::make_shared<GenArgs>();
  CLI::App* sub = cli.app.add_subcommand(
      "gen", "Write a synthetic LIBSVM file (Criteo- or KDD12-shaped) drawn from a planted GLM");
  sub->add_option("--shape", args->options.shape,
                  "criteo (d = 1,000,000) or kdd12 (d = 54,686,452)")
      ->required();
  sub->add_option("--rows", args->options.rows, "Number of rows")->required();
  sub->add_option("--seed", args->options.seed,
                  "Seed: the output is a function of shape, rows, seed and task")
      ->required();
  sub->add_option("--task", args->options.task, "binary (labels 1/0) or regression")
      ->capture_default_str();
  sub->add_option("-o,--output", args->options.output,
                  "Output file ('-' for stdout); a name ending in .zst is zstd-compressed")
      ->capture_default_str();
  sub->add_option("--weights", args->options.weights,
                  "Where to write the planted weights CSV (default: OUTPUT.weights.csv; "
                  "none for stdout unless given)");
  sub->add_option("--threads", args->options.threads,
                  "Threads drawing rows (0: all cores; .zst output adds as many zstd workers). "
                  "The output does not depend on it")
      ->capture_default_str();
  sub->add_flag("-q,--quiet", args->quiet, "Print nothing on success");
  sub->callback([&cli, args] { cli.exit_code = run_gen(*args); });
}

}  // namespace agld::cli
