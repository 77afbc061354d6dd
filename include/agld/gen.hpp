// agld gen: synthetic LIBSVM data with a planted generalised linear model, shaped like
// the Criteo and KDD Cup 2012 click logs. docs/gen.md describes what is drawn and how.
//
// The text is a pure function of (shape, rows, seed, task): every row draws its randomness
// from a counter-based generator keyed by (seed, row index) and every weight from a hash
// of (seed, feature index), so any number of threads writes the same bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "agld/file.hpp"
#include "agld/status.hpp"

namespace agld {

// What a shape looks like, before any row is drawn.
struct GenShapeInfo {
  std::string name;
  uint64_t features = 0;            // d: feature indices are 1..d
  uint32_t numeric = 0;             // real-valued features, indices 1..numeric
  uint32_t fields = 0;              // categorical fields, one one-hot feature each per row
  double target_positive_rate = 0;  // what the intercept is calibrated to (binary task)
};

// Fails with invalid_argument for a shape other than "criteo" or "kdd12".
Status gen_shape_info(const std::string& shape, GenShapeInfo* out);

struct GenProgress {
  uint64_t rows = 0;  // rows written so far
  uint64_t rows_total = 0;
  uint64_t text_bytes = 0;  // LIBSVM bytes written so far (before compression)
  double seconds = 0;       // since generate() started
};

struct GenOptions {
  std::string shape = "criteo";  // "criteo" or "kdd12"
  uint64_t rows = 0;             // >= 1
  uint64_t seed = 0;
  std::string task = "binary";  // "binary" (labels 1/0) or "regression" (real labels)
  // A path, or "-" for stdout. A path ending in ".zst" gets one zstd frame. A file appears
  // only when everything, weights included, has been written.
  std::string output = "-";
  // The weights CSV. Empty: output + ".weights.csv" when output is a file, none for stdout.
  std::string weights;
  int threads = 0;  // 0: all cores. The text does not depend on it.
  int zstd_level = 3;
  // Called after each block of rows, from one thread at a time. Must not block for long.
  std::function<void(const GenProgress&)> progress;
};

struct GenReport {
  uint64_t rows = 0;
  uint64_t features = 0;  // d of the shape
  uint64_t nnz = 0;
  uint64_t text_bytes = 0;      // LIBSVM text written
  uint64_t output_bytes = 0;    // bytes written to the output (compressed size for .zst)
  uint64_t positives = 0;       // binary: rows labelled 1
  uint64_t features_used = 0;   // distinct features that occur (0 when no weights file)
  double intercept = 0;         // b
  double tau = 0;               // prior sd of the weights: w_j ~ N(0, tau^2)
  double mean_probability = 0;  // binary: mean of sigmoid(x.w + b) over the rows written
  double seconds = 0;
  std::string output;   // as given ("-" for stdout)
  std::string weights;  // the weights CSV written, empty if none
};

// Draws the rows and writes them (and the weights CSV) through fs (stdout for "-"). On
// failure nothing is left at either path; report is filled only on success.
Status generate(const GenOptions& options, GenReport* report, FileSystem& fs = FileSystem::local());

}  // namespace agld
