// agld gen: synthetic LIBSVM rows from a planted GLM (docs/gen.md). This file is generate()
// and its pipeline; the model is in planted_model.cpp, the shapes in shapes.cpp, the outputs
// in sinks.cpp, the arithmetic in det_math.hpp and the randomness in row_rng.hpp.
//
// Rows are drawn in blocks by a oneTBB pipeline: a serial input stage hands out block
// numbers, a parallel stage draws and formats the rows of a block into its own buffer, and
// a serial in-order stage writes the buffers (through zstd for .zst). Each row draws from a
// splitmix64 stream keyed by (seed, row index), so the bytes do not depend on the blocks'
// schedule or the number of threads.
#include "agld/gen.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "agld/file.hpp"
#include "gen/planted_model.hpp"
#include "gen/shapes.hpp"
#include "gen/sinks.hpp"

namespace agld {
namespace {

using gen::FileSink;
using gen::kMaxLabelChars;
using gen::make_shape;
using gen::kRowTextCap;
using gen::Occurrence;
using gen::PlantedModel;
using gen::RowDraw;
using gen::Shape;
using gen::Sink;
using gen::StdoutSink;
using gen::write_weights;
using gen::ZstdSink;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

constexpr uint64_t kBlockRows = 4096;

struct Block {
  uint64_t first_row = 0;
  uint64_t rows = 0;
  std::vector<char> text;
  size_t len = 0;
  uint64_t nnz = 0;
  uint64_t positives = 0;
  double probability_sum = 0;
};

void fill_block(const PlantedModel& model, Occurrence* occ, Block* b) {
  RowDraw draw;
  const size_t row_max = kMaxLabelChars + kRowTextCap + 1;
  b->len = 0;
  b->nnz = 0;
  b->positives = 0;
  b->probability_sum = 0;
  for (uint64_t i = b->first_row; i < b->first_row + b->rows; ++i) {
    if (b->text.size() < b->len + row_max) {
      b->text.resize(std::max(2 * b->text.size(), b->len + row_max));
    }
    size_t n = 0;
    PlantedModel::RowResult r = model.write_row(i, &draw, b->text.data() + b->len, &n);
    b->len += n;
    b->nnz += r.nnz;
    b->positives += r.positive ? 1 : 0;
    b->probability_sum += r.probability;
    if (occ != nullptr) {
      for (uint32_t k = 0; k < draw.nnz; ++k) occ->mark(draw.indices[k]);
    }
  }
}

struct Totals {
  uint64_t rows = 0, nnz = 0, text_bytes = 0, positives = 0;
  double probability_sum = 0;
};

Status run_pipeline(const GenOptions& opt, const PlantedModel& model, Occurrence* occ, Sink* sink,
                    int threads, std::chrono::steady_clock::time_point start, Totals* totals) {
  const uint64_t blocks = (opt.rows + kBlockRows - 1) / kBlockRows;
  const size_t tokens = 2 * static_cast<size_t>(threads) + 2;
  // At most `tokens` blocks are in flight, and they are consecutive, so block k can use
  // slot k mod tokens.
  std::vector<Block> slots(tokens);
  uint64_t next = 0;
  std::atomic<bool> stop{false};
  Status status;
  auto hand_out = [&](tbb::flow_control& fc) -> Block* {
    if (next == blocks || stop.load(std::memory_order_relaxed)) {
      fc.stop();
      return nullptr;
    }
    Block* b = &slots[next % tokens];
    b->first_row = next * kBlockRows;
    b->rows = std::min(kBlockRows, opt.rows - b->first_row);
    ++next;
    return b;
  };
  auto draw = [&](Block* b) {
    if (!stop.load(std::memory_order_relaxed)) fill_block(model, occ, b);
    return b;
  };
  auto write = [&](Block* b) {
    if (stop.load(std::memory_order_relaxed)) return;
    Status s = sink->write(b->text.data(), b->len);
    if (!s.is_ok()) {
      status = s;
      stop.store(true);
      return;
    }
    totals->rows += b->rows;
    totals->nnz += b->nnz;
    totals->text_bytes += b->len;
    totals->positives += b->positives;
    totals->probability_sum += b->probability_sum;
    if (opt.progress) {
      GenProgress p;
      p.rows = totals->rows;
      p.rows_total = opt.rows;
      p.text_bytes = totals->text_bytes;
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      opt.progress(p);
    }
  };
  tbb::parallel_pipeline(
      tokens, tbb::make_filter<void, Block*>(tbb::filter_mode::serial_in_order, hand_out) &
                  tbb::make_filter<Block*, Block*>(tbb::filter_mode::parallel, draw) &
                  tbb::make_filter<Block*, void>(tbb::filter_mode::serial_in_order, write));
  return status;
}

Status generate_impl(const GenOptions& opt, GenReport* report, FileSystem& fs) {
  const auto start = std::chrono::steady_clock::now();
  Shape shape;
  AGLD_RETURN_IF_ERROR(make_shape(opt.shape, &shape));
  if (opt.task != "binary" && opt.task != "regression") {
    return Status::invalid_argument("unknown task '" + opt.task +
                                    "' (expected binary or regression)");
  }
  if (opt.rows == 0) return Status::invalid_argument("--rows must be at least 1");
  if (opt.threads < 0) return Status::invalid_argument("--threads must be 0 (all cores) or more");
  if (opt.output.empty()) return Status::invalid_argument("empty output path");
  const bool to_stdout = opt.output == "-";
  std::string weights_path = opt.weights;
  if (weights_path.empty() && !to_stdout) weights_path = opt.output + ".weights.csv";
  if (!weights_path.empty() && weights_path == opt.output) {
    return Status::invalid_argument(weights_path + ": the weights would overwrite the data");
  }
  if (weights_path == "-") {
    return Status::invalid_argument("the weights cannot go to stdout; give --weights a path");
  }

  std::unique_ptr<tbb::global_control> allow;
  std::unique_ptr<tbb::task_arena> arena;
  int threads = opt.threads;
  if (threads > 0) {
    // More threads than cores is allowed (and pointless); without this TBB warns.
    if (threads > tbb::this_task_arena::max_concurrency()) {
      allow = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    static_cast<size_t>(threads));
    }
    arena = std::make_unique<tbb::task_arena>(threads);
  } else {
    threads = tbb::this_task_arena::max_concurrency();
  }

  // Open both outputs first: a bad weights path fails before any row is drawn.
  std::unique_ptr<WritableFile> data_file, weights_file;
  if (!to_stdout) AGLD_RETURN_IF_ERROR(fs.create_atomic(opt.output, &data_file));
  if (!weights_path.empty()) {
    AGLD_RETURN_IF_ERROR(fs.create_atomic(weights_path, &weights_file));
  }
  std::unique_ptr<Sink> base;
  if (to_stdout) {
    base = std::make_unique<StdoutSink>();
  } else {
    base = std::make_unique<FileSink>(data_file.get());
  }
  std::unique_ptr<ZstdSink> zstd;
  Sink* sink = base.get();
  if (!to_stdout && ends_with(opt.output, ".zst")) {
    zstd = std::make_unique<ZstdSink>(base.get(), opt.output);
    // zstd compresses on its own workers, beside the pipeline's threads. Always at least
    // one: zstd's output is the same for any number of workers >= 1 (but not for 0), so
    // the .zst bytes, not only the text, do not depend on --threads.
    AGLD_RETURN_IF_ERROR(zstd->open(opt.zstd_level, threads));
    sink = zstd.get();
  }

  PlantedModel model(shape, opt.seed, opt.task == "binary");
  std::unique_ptr<Occurrence> occ;
  if (weights_file) occ = std::make_unique<Occurrence>(shape.info.features + 1);
  Totals totals;
  Status status;
  auto body = [&] {
    model.calibrate();
    status = run_pipeline(opt, model, occ.get(), sink, threads, start, &totals);
  };
  if (arena) {
    arena->execute(body);
  } else {
    body();
  }
  AGLD_RETURN_IF_ERROR(status);
  AGLD_RETURN_IF_ERROR(sink->finish());

  GenReport r;
  if (weights_file) {
    AGLD_RETURN_IF_ERROR(write_weights(model, *occ, weights_file.get(), &r.features_used));
  }
  if (data_file) AGLD_RETURN_IF_ERROR(data_file->commit());
  if (weights_file) AGLD_RETURN_IF_ERROR(weights_file->commit());

  r.rows = totals.rows;
  r.features = shape.info.features;
  r.nnz = totals.nnz;
  r.text_bytes = totals.text_bytes;
  r.output_bytes = base->bytes();
  r.positives = model.binary() ? totals.positives : 0;
  r.intercept = model.intercept();
  r.tau = model.tau();
  r.mean_probability =
      model.binary() ? totals.probability_sum / static_cast<double>(totals.rows) : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.output = opt.output;
  r.weights = weights_path;
  *report = std::move(r);
  return Status::ok();
}

}  // namespace

Status generate(const GenOptions& options, GenReport* report, FileSystem& fs) {
  try {
    return generate_impl(options, report, fs);
  } catch (const std::exception& e) {
    return Status::internal(std::string("gen: ") + e.what());
  }
}

}  // namespace agld
