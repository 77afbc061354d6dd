// Converting LIBSVM text into stores: the service behind `agld convert`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

struct ConvertOptions {
  std::vector<std::string> inputs;  // "-" is stdin
  std::string output;
  std::string compression = "zstd:1";  // "zstd", "zstd:LEVEL" (default level 1) or "none"
  uint64_t chunk_rows = 65536;       // a chunk closes at this many rows ...
  uint64_t chunk_bytes = 1 << 20;    // ... or this many raw bytes, whichever comes first
  int threads = 0;                   // 0: all cores
  std::string index_base = "auto";   // "auto", "0" or "1"
  std::optional<uint64_t> features;  // fixes d
  std::string task = "auto";         // "auto", "binary" or "regression"
  // Rows in a seeded random order (the default): cyclic and block-reshuffle access assume
  // the stored order has no trend (docs/readers.md). false keeps the source's order.
  bool shuffle = true;
  uint64_t seed = 0;                    // of the shuffle and the test split
  uint64_t memory = uint64_t{1} << 30;  // bound on the shuffle's memory (at least 64M)
  std::string temp_dir;                 // for shuffle runs; default: the output's directory
  double test_fraction = 0;
  std::string test_output;
  bool skip_bad_lines = false;
  bool delta = false;        // delta-code indices before zstd
  bool index_shuffle = true;  // byte-transpose the index column before zstd
  // zstd without Huffman-coded literals (the default): a store 7 % larger on criteo-shaped
  // data that decompresses 1.35x faster; false for a disk slower than the CPU
  // (docs/readers.md). Ignored without zstd.
  bool raw_literals = true;
  // The complete one-hot fields to record (docs/format.md, "Metadata"): "auto" detects them
  // in each output's rows; "none"; or "A-B,C-D,..." declares them, in the source's feature
  // numbers, and every row is checked against them (a row that breaks one is an error).
  std::string fields = "auto";
};

struct ConvertProgress {
  uint64_t source_bytes = 0;        // bytes of the input files consumed
  std::optional<uint64_t> source_total;  // their total size, when known
  uint64_t text_bytes = 0;          // decompressed text bytes parsed
  uint64_t rows = 0;
  double seconds = 0;
  const char* phase = "parse";      // "parse", then "shuffle" while the shuffle drains
};

struct ConvertReport {
  uint64_t rows = 0, test_rows = 0, nnz = 0, features = 0;
  uint64_t skipped_lines = 0;
  std::vector<std::string> skipped_examples;  // the first few skipped lines, with reasons
  std::vector<std::string> notes;             // e.g. "qid tokens ignored (first at f:12)"
  LabelKind label_kind = LabelKind::kReal;
  int index_base = 1;
  uint64_t text_bytes = 0, source_bytes = 0, output_bytes = 0;
  uint64_t shuffle_runs = 0;        // sorted runs spilled to disk by the shuffle
  uint64_t shuffle_merges = 0;      // runs merged into larger ones before the last merge
  uint64_t shuffle_disk_bytes = 0;  // the most bytes its runs held on disk at once, by output, summed
  // Memory of the per-feature statistics at their peak: 16 bytes a feature, for every output
  // at once when the order is kept, one at a time when shuffled.
  uint64_t feature_stats_bytes = 0;
  // The same for the detection of one-hot fields (--fields auto): 4 bytes a feature.
  uint64_t field_detect_bytes = 0;
  // The complete one-hot fields recorded in the output and in the test output (0-based).
  std::vector<FeatureField> fields, test_fields;
  bool fields_declared = false;  // declared by --fields, not detected
  double seconds = 0;
};

using ConvertProgressFn = std::function<void(const ConvertProgress&)>;

Status convert(const ConvertOptions& opt, ConvertReport* report,
               const ConvertProgressFn& progress = {}, FileSystem& fs = FileSystem::local());

}  // namespace agld
