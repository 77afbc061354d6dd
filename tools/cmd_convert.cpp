// agld convert INPUT... -o STORE
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "agld/convert.hpp"
#include "cli_common.hpp"

namespace agld::cli {
namespace {

struct ConvertArgs {
  ConvertOptions opt;
  std::string chunk_bytes = "1M";
  std::string memory = "1G";
  bool quiet = false;
  bool json = false;
  bool delta = false;
  bool no_index_shuffle = false;
  bool huffman_literals = false;
  bool keep_order = false;
  bool shuffle = false;  // the default; accepted so that old scripts still run
};

void draw_progress(const ConvertProgress& p) {
  const double mb = static_cast<double>(p.text_bytes) / 1e6;
  std::string line = fmt::format("\r{}: {} read, {} rows, {:.0f}k rows/s, {:.0f} MB/s", p.phase,
                                 human_bytes(static_cast<double>(p.source_bytes)), p.rows,
                                 static_cast<double>(p.rows) / p.seconds / 1e3, mb / p.seconds);
  if (p.source_total && *p.source_total > 0 && p.source_bytes > 0) {
    const double frac = static_cast<double>(p.source_bytes) / static_cast<double>(*p.source_total);
    line += fmt::format(" ({:.0f}%, ETA {})", 100 * frac,
                        human_duration(p.seconds * (1 - frac) / std::max(frac, 1e-9)));
  }
  std::cerr << line << "\033[K" << std::flush;
}

// The fields as the metadata has them: 0-based first feature and count.
nlohmann::json fields_json(const std::vector<FeatureField>& fields) {
  nlohmann::json j = nlohmann::json::array();
  for (const FeatureField& f : fields) j.push_back({{"first", f.first}, {"count", f.count}});
  return j;
}

int run_convert(ConvertArgs& a) {
  a.opt.chunk_bytes = parse_size(a.chunk_bytes);
  a.opt.memory = parse_size(a.memory);
  a.opt.delta = a.delta;
  a.opt.index_shuffle = !a.no_index_shuffle;
  a.opt.raw_literals = !a.huffman_literals;
  if (a.shuffle && a.keep_order) {
    return fail(Status::invalid_argument(
        "--shuffle and --keep-order contradict each other (rows are shuffled by default)"));
  }
  a.opt.shuffle = !a.keep_order;
  if (a.huffman_literals && a.opt.compression == "none") {
    return fail(Status::invalid_argument("--huffman-literals applies to zstd compression only"));
  }
  const bool show = !a.quiet && stderr_is_tty();
  ConvertReport rep;
  ConvertProgressFn progress;
  if (show) progress = draw_progress;
  Status st = convert(a.opt, &rep, progress);
  if (show) std::cerr << "\r\033[K" << std::flush;
  if (!st.is_ok()) return fail(st);
  for (const std::string& note : rep.notes) {
    if (!a.quiet) std::cerr << "agld: note: " << note << "\n";
  }
  if (rep.skipped_lines > 0 && !a.quiet) {
    std::cerr << fmt::format("agld: skipped {} bad line{}", rep.skipped_lines,
                             rep.skipped_lines == 1 ? "" : "s");
    std::cerr << (rep.skipped_examples.empty() ? "" : "; the first:") << "\n";
    for (const std::string& e : rep.skipped_examples) std::cerr << "  " << e << "\n";
  }
  if (a.json) {
    nlohmann::json j{{"rows", rep.rows},
                     {"test_rows", rep.test_rows},
                     {"features", rep.features},
                     {"nnz", rep.nnz},
                     {"label_kind", rep.label_kind == LabelKind::kBinary ? "binary" : "real"},
                     {"index_base", rep.index_base},
                     {"skipped_lines", rep.skipped_lines},
                     {"text_bytes", rep.text_bytes},
                     {"source_bytes", rep.source_bytes},
                     {"output_bytes", rep.output_bytes},
                     {"order", a.opt.shuffle ? "shuffled" : "kept"},
                     {"seed", a.opt.seed},
                     {"shuffle_runs", rep.shuffle_runs},
                     {"shuffle_merges", rep.shuffle_merges},
                     {"shuffle_disk_bytes", rep.shuffle_disk_bytes},
                     {"feature_stats_bytes", rep.feature_stats_bytes},
                     {"field_detect_bytes", rep.field_detect_bytes},
                     {"fields", fields_json(rep.fields)},
                     {"test_fields", fields_json(rep.test_fields)},
                     {"fields_declared", rep.fields_declared},
                     {"seconds", rep.seconds},
                     {"text_mb_per_s", static_cast<double>(rep.text_bytes) / 1e6 / rep.seconds}};
    std::cout << j.dump(2) << std::endl;
  } else if (!a.quiet) {
    std::string rows = fmt::format("{} rows", rep.rows);
    if (!a.opt.test_output.empty()) rows += fmt::format(" (+ {} test rows)", rep.test_rows);
    std::string order = "in the source's order";
    if (a.opt.shuffle) {
      order = fmt::format("shuffled (seed {}{})", a.opt.seed,
                          rep.shuffle_runs ? fmt::format(", {} runs spilled", rep.shuffle_runs) : "");
    }
    std::string fields;
    if (a.opt.fields != "none") {
      fields = fmt::format(", {} one-hot field{} {}", rep.fields.size(), rep.fields.size() == 1 ? "" : "s",
                           rep.fields_declared ? "(declared, checked)" : "(detected)");
    }
    std::cerr << fmt::format(
        "agld: {} -> {}: {} {}, {} features{}, {} nonzeros, {} labels; {} of text in {:.2f}s "
        "({:.0f} MB/s), {} written\n",
        a.opt.inputs.size() == 1 ? a.opt.inputs[0] : fmt::format("{} inputs", a.opt.inputs.size()),
        a.opt.output, rows, order, rep.features, fields, rep.nnz,
        rep.label_kind == LabelKind::kBinary ? "binary" : "real",
        human_bytes(static_cast<double>(rep.text_bytes)), rep.seconds,
        static_cast<double>(rep.text_bytes) / 1e6 / rep.seconds,
        human_bytes(static_cast<double>(rep.output_bytes)));
  }
  return kExOk;
}

}  // namespace

void add_convert(Cli& cli) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* c = cli.app.add_subcommand(
      "convert", "Convert LIBSVM text (plain, .gz, .bz2, .xz, .zst, or - for stdin) into a store");
  c->add_option("inputs", a->opt.inputs, "LIBSVM files, read in order; - is stdin")->required();
  c->add_option("-o,--output", a->opt.output, "the store to write")->required();
  c->add_option("--compression", a->opt.compression, "zstd, zstd:LEVEL (-7..22) or none")
      ->default_str("zstd:1");
  c->add_option("--chunk-rows", a->opt.chunk_rows, "a chunk closes at this many rows")
      ->default_val(a->opt.chunk_rows);
  c->add_option("--chunk-bytes", a->chunk_bytes, "... or at this many raw bytes")
      ->check(size_validator())
      ->default_val(a->chunk_bytes);
  c->add_option("--threads", a->opt.threads, "threads (0: all cores)")->default_val(0);
  c->add_option("--index-base", a->opt.index_base,
                "auto (0-based if the first 4 MiB hold an index 0), 0 or 1")
      ->check(CLI::IsMember({"auto", "0", "1"}))
      ->default_val("auto");
  c->add_option("--features", a->opt.features, "fix the number of features d (a larger index is an error)");
  c->add_option("--task", a->opt.task,
                "auto, binary ({0,1}, {-1,+1} or {1,2} -> +-1) or regression")
      ->check(CLI::IsMember({"auto", "binary", "regression"}))
      ->default_val("auto");
  c->add_flag("--keep-order", a->keep_order,
              "keep the source's row order (default: a seeded random order, shuffled within "
              "--memory; cyclic access on time-ordered or sorted rows samples the wrong "
              "posterior: docs/readers.md)");
  c->add_flag("--shuffle", a->shuffle, "the default, accepted for old scripts (a no-op)");
  c->add_option("--seed", a->opt.seed, "seed of the shuffle and of --test-fraction")->default_val(0);
  c->add_option("--memory", a->memory,
                "memory bound for the shuffle and the per-feature statistics (16 bytes a "
                "feature, 20 with --fields auto, counted in when --features is given), at least "
                "64M (e.g. 512M, 8G); "
                "beyond it rows spill to temporary files")
      ->check(size_validator())
      ->default_val(a->memory);
  c->add_option("--temp-dir", a->opt.temp_dir,
                "where the shuffle spills (default: beside the output; about the rows' "
                "uncompressed size)");
  c->add_option("--test-fraction", a->opt.test_fraction,
                "send each row to the test store with this probability (seeded)");
  c->add_option("--test-output", a->opt.test_output, "the test store for --test-fraction");
  c->add_option("--fields", a->opt.fields,
                "the complete one-hot fields to record (every row holds exactly one feature of "
                "each, with value 1; the sampler draws their sum directions exactly): auto "
                "detects them in each output, in the conversion's one pass (4 bytes a feature); "
                "none; or A-B,C-D,... declares them in the source's feature numbers, and a row "
                "against them is a bad line (file:line; exit 65)")
      ->default_val("auto");
  c->add_flag("--skip-bad-lines", a->opt.skip_bad_lines, "skip and count bad lines instead of stopping");
  c->add_flag("--delta", a->delta, "delta-code indices within rows before zstd (off: it hurts on criteo/kdd12)");
  c->add_flag("--no-index-shuffle", a->no_index_shuffle, "do not byte-transpose the index column before zstd");
  c->add_flag("--huffman-literals", a->huffman_literals,
              "zstd with Huffman-coded literals: a store 7% smaller that decompresses 1.35x "
              "slower (for a disk slower than the CPU; docs/readers.md)");
  c->add_flag("-q,--quiet", a->quiet, "no progress line and no summary");
  c->add_flag("--json", a->json, "print a JSON report on stdout");
  c->callback([&cli, a] { cli.exit_code = run_convert(*a); });
}

}  // namespace agld::cli
