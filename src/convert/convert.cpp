// `agld convert`: LIBSVM text to stores, as a oneTBB pipeline
//
//   read (serial) -> parse (parallel) -> assemble (serial) -> encode (parallel) -> write (serial)
//
// Reading cuts the text into blocks of whole lines; parsing turns a block into rows;
// assembling checks labels, gathers statistics, splits rows between the train and test
// outputs and cuts them into chunks (or hands them to the shuffler); encoding compresses
// and checksums chunks; writing appends them in order and counts their features (the
// per-feature statistics, in the order the rows are stored, and what detects the one-hot
// fields). Declared fields (--fields A-B,...) are checked row by row as blocks are parsed.
// Memory is bounded by the number of blocks in flight, whatever the input's size, and the
// statistics' 16 bytes a feature (20 with --fields auto).
#include "agld/convert.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "agld/version.hpp"
#include "convert/declared_fields.hpp"
#include "convert/field_detector.hpp"
#include "convert/input.hpp"
#include "convert/libsvm.hpp"
#include "common/mix.hpp"
#include "convert/shuffle.hpp"
#include "store/feature_accumulator.hpp"

namespace agld {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBlockBytes = 4 << 20;          // text per parse task
constexpr size_t kMaxLineBytes = size_t{1} << 30;  // a longer line is an error

// A chunk ready to encode: rows [r0, r1) of *rows, which is either its own copy (a chunk
// that spans blocks, or shuffled output) or the rows of the block it came from (no copy).
struct Sealed {
  int sink = 0;
  SparseRows own;
  const SparseRows* rows = nullptr;
  size_t r0 = 0, r1 = 0;
  EncodedChunk encoded;

  static Sealed owning(int sink, SparseRows rows) {
    Sealed s{sink, std::move(rows), nullptr, 0, 0, {}};
    s.r1 = s.own.rows();
    return s;
  }
  Status encode(const ChunkCodec& codec) {
    return encode_chunk(rows ? *rows : own, r0, r1, codec, &encoded);
  }
};

// A growable byte buffer that, unlike std::string, does not zero what it is about to read into.
class TextBuffer {
 public:
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view view() const { return {data_.get(), size_}; }
  // Room for n more bytes at end(); then commit() what was written there.
  char* reserve_tail(size_t n) {
    if (size_ + n > cap_) {
      const size_t cap = std::max(size_ + n, 2 * cap_);
      std::unique_ptr<char[]> bigger(new char[cap]);
      if (size_) std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      cap_ = cap;
    }
    return data_.get() + size_;
  }
  void commit(size_t n) { size_ += n; }
  void assign(std::string_view s) {
    size_ = 0;
    char* to = reserve_tail(s.size());  // null while nothing was ever reserved
    if (!s.empty()) std::memcpy(to, s.data(), s.size());
    size_ = s.size();
  }
  void truncate(size_t n) { size_ = n; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, cap_ = 0;
};

struct Work {
  TextBuffer text;
  // For a positional input, the block is [offset, offset + length) of *source, read by the
  // (parallel) parse stage; otherwise text holds it already.
  std::shared_ptr<const TextInput> source;
  uint64_t offset = 0, length = 0;
  size_t file = 0;
  ParsedBlock parsed;
  std::vector<Sealed> sealed;
};

bool is_binary_set(const std::vector<double>& s) {
  auto within = [&](double a, double b) {
    return std::all_of(s.begin(), s.end(), [&](double v) { return v == a || v == b; });
  };
  return within(0, 1) || within(-1, 1) || within(1, 2);
}

std::string label_text(double v) { return fmt::format("{}", v); }

std::string label_set_text(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  return fmt::format("{{{}}}", fmt::join(s, ", "));
}

// The inputs' total size, for the progress line's ETA; unknown with stdin or a non-file.
std::optional<uint64_t> total_size(const std::vector<std::string>& inputs) {
  uint64_t total = 0;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in == "-") return std::nullopt;
    const uint64_t size = std::filesystem::file_size(in, ec);
    if (ec) return std::nullopt;
    total += size;
  }
  return total;
}

// One output store: the chunk being built, its statistics, the shuffler and the writer.
struct Sink {
  std::string path;
  std::string part;
  std::unique_ptr<StoreWriter> writer;
  std::unique_ptr<ExternalShuffler> shuffler;
  SparseRows building;  // the chunk being built; its raw size is about 12 rows + 8 nnz
  // Statistics of the rows in this output.
  std::map<double, uint64_t> label_counts;  // only while the label set is small
  double label_min = INFINITY, label_max = -INFINITY, label_sum = 0;
  double sq_max = 0, sq_sum = 0;
  uint64_t empty_rows = 0, rows = 0;
  // Per-feature statistics of the rows written, in the order written (docs/format.md,
  // "Feature statistics"): the same sums as a pass over the store would make.
  FeatureAccumulator features;
  // With --fields auto: what, besides the counts above, finds the complete one-hot fields.
  FieldDetector fields;
};

class Converter {
 public:
  Converter(const ConvertOptions& opt, ConvertReport* report, const ConvertProgressFn& progress,
            FileSystem& fs)
      : opt_(opt), report_(report), progress_fn_(progress), fs_(fs) {}

  Status run();

 private:
  Status validate();
  Status resolve_declared_fields();
  bool detect_fields() const { return fields_spec_.mode == FieldsSpec::Mode::kAuto; }
  uint64_t bytes_per_feature() const {
    return FeatureAccumulator::kBytesPerFeature + (detect_fields() ? FieldDetector::kBytesPerFeature : 0);
  }
  Status open_sinks();
  Status read_block(Work* w, bool* have);
  Status find_line_end(const TextInput& in, uint64_t start, uint64_t size, uint64_t* end);
  Status load_block(Work* w);
  Status assemble(Work* w);
  void route_rows(Work* w, int sink, const SparseRows& src, size_t r0, size_t r1);
  void seal(Work* w, int sink);
  Status write(Work* w);
  Status add_chunk(Sink& s, const Sealed& c);
  Status drain_shuffler(int sink);
  Status finish();
  void report_progress(bool force);
  std::string where(size_t file, uint64_t line, uint64_t col = 0) const;

  const ConvertOptions& opt_;
  ConvertReport* report_;
  const ConvertProgressFn& progress_fn_;
  FileSystem& fs_;
  ChunkCodec codec_;
  ParseOptions parse_opt_;
  FieldsSpec fields_spec_;
  std::vector<FeatureField> declared_;  // 0-based, once the index base is known
  uint64_t threads_ = 1;
  uint64_t shuffle_memory_ = 0;  // all shuffles' share of --memory
  uint64_t drain_bytes_ = 0;     // what a drain holds in flight, besides its shuffle's buffers

  // Reading state (read stage only).
  std::vector<SourceInfo> sources_;
  size_t file_ = 0;
  std::shared_ptr<TextInput> input_;
  std::string carry_;
  uint64_t file_offset_ = 0;  // of the current block in the current file's text
  bool base_resolved_ = false;
  std::atomic<uint64_t> source_bytes_done_{0};  // of the files already finished
  std::atomic<uint64_t> source_bytes_now_{0};
  std::atomic<uint64_t> text_bytes_{0};
  std::optional<uint64_t> source_total_;  // the inputs' total size, when all are files

  // Assembling state (assemble stage only).
  std::vector<Sink> sinks_;
  std::vector<double> label_set_;  // distinct labels, tracked while there are at most 3
  bool label_set_small_ = true;
  uint64_t global_row_ = 0;
  size_t line_file_ = 0;        // the file whose lines line_base_ counts
  uint64_t line_base_ = 0;      // lines of that file before the current block
  uint64_t max_index_ = 0;
  uint64_t skipped_ = 0;
  uint64_t split_seed_ = 0;
  bool qid_noted_ = false;
  const char* phase_ = "parse";  // for the progress line
  Clock::time_point start_ = Clock::now(), last_progress_{};

  std::mutex error_mu_;
  Status error_;
  std::atomic<bool> failed_{false};
  void set_error(Status s) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (error_.is_ok()) error_ = std::move(s);
    failed_ = true;
  }
};

std::string Converter::where(size_t file, uint64_t line, uint64_t col) const {
  std::string name = opt_.inputs[file] == "-" ? "<stdin>" : opt_.inputs[file];
  std::string s = name + ":" + std::to_string(line);
  if (col) s += ":" + std::to_string(col);
  return s;
}

Status Converter::validate() {
  if (opt_.inputs.empty()) return Status::invalid_argument("no input files");
  if (opt_.output.empty()) return Status::invalid_argument("no output (-o STORE)");
  const std::string& c = opt_.compression;
  if (c == "none") {
    codec_.codec = Codec::kNone;
  } else if (c == "zstd" || c.rfind("zstd:", 0) == 0) {
    codec_.codec = Codec::kZstd;
    codec_.level = 1;
    if (c.size() > 5) {
      try {
        size_t pos;
        codec_.level = std::stoi(c.substr(5), &pos);
        if (pos != c.size() - 5) throw std::invalid_argument("junk");
      } catch (const std::exception&) {
        return Status::invalid_argument("--compression: bad zstd level in '" + c + "'");
      }
      if (codec_.level < -7 || codec_.level > 22) {
        return Status::invalid_argument("--compression: zstd level must be in -7..22");
      }
    }
  } else {
    return Status::invalid_argument("--compression must be zstd, zstd:LEVEL or none, not '" + c + "'");
  }
  codec_.delta = opt_.delta;
  codec_.index_shuffle = opt_.index_shuffle;
  codec_.raw_literals = opt_.raw_literals && codec_.codec == Codec::kZstd;
  if (opt_.chunk_rows == 0 || opt_.chunk_rows > (uint64_t{1} << 31)) {
    return Status::invalid_argument("--chunk-rows must be between 1 and 2^31");
  }
  if (opt_.chunk_bytes < 1024 || opt_.chunk_bytes > (uint64_t{1} << 30)) {
    return Status::invalid_argument("--chunk-bytes must be between 1K and 1G");
  }
  if (opt_.index_base == "0" || opt_.index_base == "1") {
    parse_opt_.index_base = opt_.index_base[0] - '0';
    base_resolved_ = true;
  } else if (opt_.index_base != "auto") {
    return Status::invalid_argument("--index-base must be auto, 0 or 1");
  }
  if (opt_.features) {
    if (*opt_.features == 0 || *opt_.features > (uint64_t{1} << 32)) {
      return Status::invalid_argument("--features must be between 1 and 2^32");
    }
    parse_opt_.features = opt_.features;
  }
  if (opt_.task != "auto" && opt_.task != "binary" && opt_.task != "regression") {
    return Status::invalid_argument("--task must be auto, binary or regression");
  }
  parse_opt_.binary_labels_only = opt_.task == "binary";
  parse_opt_.skip_bad_lines = opt_.skip_bad_lines;
  if (!(opt_.test_fraction >= 0 && opt_.test_fraction < 1)) {
    return Status::invalid_argument("--test-fraction must be in [0, 1)");
  }
  if ((opt_.test_fraction > 0) != !opt_.test_output.empty()) {
    return Status::invalid_argument("--test-fraction and --test-output go together");
  }
  auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::weakly_canonical(a, ec) == std::filesystem::weakly_canonical(b, ec);
  };
  for (const std::string& in : opt_.inputs) {
    if (in != "-" && (same(in, opt_.output) || (!opt_.test_output.empty() && same(in, opt_.test_output)))) {
      return Status::invalid_argument(in + ": the output would overwrite an input");
    }
  }
  if (!opt_.test_output.empty() && same(opt_.output, opt_.test_output)) {
    return Status::invalid_argument("--test-output is the same file as -o");
  }
  if (std::count(opt_.inputs.begin(), opt_.inputs.end(), "-") > 1) {
    return Status::invalid_argument("stdin ('-') given more than once");
  }
  if (opt_.shuffle && opt_.memory < (64 << 20)) {
    return Status::invalid_argument(
        "--memory must be at least 64M to shuffle the rows (or --keep-order, which needs none)");
  }
  if (opt_.shuffle && !opt_.temp_dir.empty() && !std::filesystem::is_directory(opt_.temp_dir)) {
    return Status::invalid_argument("--temp-dir " + opt_.temp_dir + ": not a directory");
  }
  AGLD_RETURN_IF_ERROR(parse_fields_spec(opt_.fields, opt_.features, &fields_spec_));
  if (base_resolved_) AGLD_RETURN_IF_ERROR(resolve_declared_fields());
  threads_ = opt_.threads > 0 ? static_cast<uint64_t>(opt_.threads)
                              : std::max(1u, std::thread::hardware_concurrency());
  split_seed_ = mix64(opt_.seed ^ 0x53504C4954ull);
  source_total_ = total_size(opt_.inputs);
  return Status::ok();
}

Status Converter::resolve_declared_fields() {
  if (fields_spec_.mode != FieldsSpec::Mode::kDeclared) return Status::ok();
  return declared_fields(fields_spec_, parse_opt_.index_base, opt_.features, &declared_);
}

Status Converter::open_sinks() {
  sinks_.resize(opt_.test_output.empty() ? 1 : 2);
  sinks_[0].path = opt_.output;
  sinks_[0].part = sinks_.size() == 2 ? "train" : "all";
  if (sinks_.size() == 2) {
    sinks_[1].path = opt_.test_output;
    sinks_[1].part = "test";
  }
  // What the pipeline holds in flight, kept out of the shuffle's share of --memory.
  const uint64_t pipeline = (2 * threads_ + 2) * 4 * kBlockBytes;
  uint64_t shuffle_memory = opt_.memory > pipeline + (32 << 20) ? opt_.memory - pipeline : (32 << 20);
  // The per-feature statistics, 16 bytes a feature and output (20 when they also detect the
  // one-hot fields), count against --memory too.
  // Kept in order, every output's are made while the pipeline runs; shuffled, one output's
  // at a time while its rows come out of the shuffle (which then holds at most half its
  // memory, its buffer or a merge's), along with the chunks the drain has in flight. With
  // d known (--features) they are reserved here; else they grow with the indices met.
  drain_bytes_ = (2 * threads_ + 1) * 2 * opt_.chunk_bytes;
  const uint64_t stats = bytes_per_feature() * opt_.features.value_or(0);
  const uint64_t stats_at_once = opt_.shuffle ? stats : stats * sinks_.size();
  if (stats_at_once > 0 && stats_at_once + (uint64_t{64} << 20) > opt_.memory) {
    return Status::invalid_argument(fmt::format(
        "--memory {}M is too small for the per-feature statistics{} of {} features ({} bytes a "
        "feature{}: {}M) and 64M for the rest: give --memory {}M or more{}",
        opt_.memory >> 20, detect_fields() ? " and the detection of one-hot fields" : "",
        *opt_.features, detect_fields() ? "16 + 4" : "16",
        opt_.shuffle || sinks_.size() == 1 ? "" : " and output, both outputs at once",
        (stats_at_once + (1 << 20) - 1) >> 20, ((stats_at_once + (1 << 20) - 1) >> 20) + 64,
        detect_fields() ? " (or --fields none)" : ""));
  }
  if (opt_.shuffle && stats > 0) {
    const uint64_t room = opt_.memory > stats + drain_bytes_ ? 2 * (opt_.memory - stats - drain_bytes_) : 0;
    shuffle_memory = std::max<uint64_t>(32 << 20, std::min(shuffle_memory, room));
  }
  shuffle_memory_ = shuffle_memory;
  for (Sink& s : sinks_) {
    if (!opt_.shuffle && stats > 0) {
      s.features.reserve(*opt_.features);
      if (detect_fields()) s.fields.reserve(*opt_.features);
    }
    AGLD_RETURN_IF_ERROR(StoreWriter::create(s.path, &s.writer, fs_));
    if (opt_.shuffle) {
      double share = sinks_.size() == 1 ? 1.0
                     : s.part == "test" ? std::max(opt_.test_fraction, 0.1)
                                        : 1.0 - std::max(opt_.test_fraction, 0.1);
      std::string dir = opt_.temp_dir;
      if (dir.empty()) {
        dir = std::filesystem::path(s.path).parent_path().string();
        if (dir.empty()) dir = ".";
      }
      s.shuffler = std::make_unique<ExternalShuffler>(opt_.seed + (s.part == "test" ? 1 : 0),
                                                      static_cast<uint64_t>(shuffle_memory * share),
                                                      dir, fs_);
    }
  }
  return Status::ok();
}

// The end of the block that starts at `start`: the first newline at or after *end - 1, plus
// one (or the file's size). Reads small windows of the file, not the block.
Status Converter::find_line_end(const TextInput& in, uint64_t start, uint64_t size, uint64_t* end) {
  char window[4096];
  uint64_t at = *end - 1;
  while (*end < size) {
    size_t got = 0;
    AGLD_RETURN_IF_ERROR(in.pread(at, window, sizeof window, &got));
    if (got == 0) break;  // the file shrank: the block ends at what is there
    if (const void* nl = std::memchr(window, '\n', got)) {
      *end = at + static_cast<uint64_t>(static_cast<const char*>(nl) - window) + 1;
      return Status::ok();
    }
    at += got;
    if (at - start > kMaxLineBytes) {
      return Status::data_error(opt_.inputs[file_] + ": the line at byte " + std::to_string(start) +
                                " is longer than 1 GiB");
    }
  }
  *end = size;
  return Status::ok();
}

Status Converter::read_block(Work* w, bool* have) {
  *have = false;
  w->text.truncate(0);
  w->source.reset();
  for (;;) {
    if (!input_) {
      if (file_ >= opt_.inputs.size()) return Status::ok();
      std::unique_ptr<TextInput> opened;
      AGLD_RETURN_IF_ERROR(TextInput::open(opt_.inputs[file_], &opened, fs_));
      input_ = std::move(opened);
      sources_.push_back(input_->info());
      file_offset_ = 0;
      carry_.clear();
    }
    w->file = file_;
    bool eof = false;
    if (input_->positional()) {
      // Only the block's end is found here; the parallel stage reads the block itself.
      const uint64_t size = *input_->info().size;
      uint64_t end = std::min(size, file_offset_ + kBlockBytes);
      AGLD_RETURN_IF_ERROR(find_line_end(*input_, file_offset_, size, &end));
      w->source = input_;
      w->offset = file_offset_;
      w->length = end - file_offset_;
      file_offset_ = end;
      source_bytes_now_ = end;
      eof = end >= size;
      if (!base_resolved_ && w->length > 0) AGLD_RETURN_IF_ERROR(load_block(w));  // to look at
    } else {
      w->text.assign(carry_);  // keeps the block's buffer: no reallocation per block
      carry_.clear();
      bool has_newline = false;  // the carry holds no newline by construction
      while (w->text.size() < kBlockBytes || !has_newline) {
        if (w->text.size() > kMaxLineBytes) {
          return Status::data_error(opt_.inputs[file_] + ": the line at byte " +
                                    std::to_string(file_offset_) + " is longer than 1 GiB");
        }
        const size_t at = w->text.size();
        char* tail = w->text.reserve_tail(kBlockBytes);
        size_t got = 0;
        Status st = input_->read(tail, kBlockBytes, &got);
        w->text.commit(got);
        if (!st.is_ok()) return st;
        source_bytes_now_ = input_->source_bytes_read();
        if (got == 0) {
          eof = true;
          break;
        }
        has_newline = has_newline || std::memchr(w->text.data() + at, '\n', got) != nullptr;
      }
      if (!eof) {
        const size_t last = w->text.view().rfind('\n');
        carry_.assign(w->text.view().substr(last + 1));
        w->text.truncate(last + 1);
      }
      file_offset_ += w->text.size();
      w->length = w->text.size();
    }
    if (eof) {
      source_bytes_done_ += input_->positional() ? *input_->info().size : input_->source_bytes_read();
      source_bytes_now_ = 0;
      input_.reset();
      ++file_;
    }
    if (w->length == 0) continue;  // an empty file, or the end of one
    if (!base_resolved_) {
      parse_opt_.index_base = has_index_zero(w->text.view()) ? 0 : 1;
      base_resolved_ = true;
      AGLD_RETURN_IF_ERROR(resolve_declared_fields());  // before any block is parsed
    }
    text_bytes_ += w->length;
    *have = true;
    return Status::ok();
  }
}

// Reads a positional block into w->text (in the parallel stage, or once for detection).
Status Converter::load_block(Work* w) {
  if (!w->source) return Status::ok();
  char* at = w->text.reserve_tail(w->length);
  uint64_t done = 0;
  while (done < w->length) {
    size_t got = 0;
    AGLD_RETURN_IF_ERROR(w->source->pread(w->offset + done, at + done, w->length - done, &got));
    if (got == 0) {
      return Status::io_error(opt_.inputs[w->file] + ": the file shrank while it was being converted");
    }
    done += got;
  }
  w->text.commit(w->length);
  w->source.reset();
  return Status::ok();
}

void Converter::seal(Work* w, int sink) {
  Sink& s = sinks_[static_cast<size_t>(sink)];
  if (s.building.rows() == 0) return;
  w->sealed.push_back(Sealed::owning(sink, std::move(s.building)));
  s.building.clear();
}

void Converter::route_rows(Work* w, int sink, const SparseRows& src, size_t r0, size_t r1) {
  Sink& s = sinks_[static_cast<size_t>(sink)];
  for (size_t r = r0; r < r1;) {
    // Take as many rows as fit in the current chunk.
    uint64_t chunk_bytes = 12 * s.building.rows() + 8 * s.building.nnz();
    size_t r_end = r;
    while (r_end < r1) {
      uint64_t nnz = src.offsets[r_end + 1] - src.offsets[r_end];
      uint64_t bytes = 12 + 8 * nnz;
      bool empty = s.building.rows() == 0 && r_end == r;
      if (!empty && (s.building.rows() + (r_end - r) >= opt_.chunk_rows ||
                     chunk_bytes + bytes > opt_.chunk_bytes)) {
        break;
      }
      chunk_bytes += bytes;
      ++r_end;
    }
    const bool completes = r_end < r1 || s.building.rows() + (r_end - r) >= opt_.chunk_rows;
    if (completes && s.building.rows() == 0) {
      // A whole chunk inside this block: encode it from the block's rows, without a copy.
      w->sealed.push_back(Sealed{sink, {}, &src, r, r_end, {}});
    } else {
      s.building.append(src, r, r_end);
      if (completes) seal(w, sink);
    }
    r = r_end;
  }
}

Status Converter::assemble(Work* w) {
  ParsedBlock& pb = w->parsed;
  if (w->file != line_file_) {
    line_file_ = w->file;
    line_base_ = 0;
  }
  const uint64_t base = line_base_;  // absolute line = base + the block's line
  line_base_ += pb.lines;
  skipped_ += pb.skipped;
  for (const ParseError& e : pb.errors) {
    std::string msg = where(w->file, base + e.line, e.column) + ": " + e.what;
    if (!opt_.skip_bad_lines) return Status::data_error(msg);
    if (report_->skipped_examples.size() < 10) report_->skipped_examples.push_back(msg);
  }
  if (pb.qid_line && !qid_noted_) {
    qid_noted_ = true;
    report_->notes.push_back("qid tokens ignored (first at " + where(w->file, base + pb.qid_line) + ")");
  }
  max_index_ = std::max(max_index_, pb.max_index);
  const SparseRows& rows = pb.rows;
  const size_t n = rows.rows();
  size_t run_start = 0;
  int run_sink = -1;
  std::vector<bool> drop;  // rows dropped for their label (--skip-bad-lines)
  for (size_t r = 0; r < n; ++r) {
    const double y = rows.labels[r];
    if (label_set_small_ &&
        std::find(label_set_.begin(), label_set_.end(), y) == label_set_.end()) {
      std::vector<double> grown = label_set_;
      grown.push_back(y);
      if (opt_.task == "binary" && !is_binary_set(grown)) {
        std::string msg = where(w->file, base + pb.row_line[r]) + ": label " + label_text(y) +
                          " makes the label set " + label_set_text(grown) +
                          ", which is not binary (0/1, -1/+1 or 1/2) and --task is binary";
        if (!opt_.skip_bad_lines) return Status::data_error(msg);
        if (report_->skipped_examples.size() < 10) report_->skipped_examples.push_back(msg);
        ++skipped_;
        if (drop.empty()) drop.assign(n, false);
        drop[r] = true;
        continue;
      }
      if (grown.size() > 3) {
        label_set_small_ = false;
      } else {
        label_set_ = std::move(grown);
      }
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (!drop.empty() && drop[r]) {
      if (run_sink >= 0 && !sinks_[static_cast<size_t>(run_sink)].shuffler) {
        route_rows(w, run_sink, rows, run_start, r);
      }
      run_sink = -1;
      continue;
    }
    int sink = 0;
    if (sinks_.size() == 2) {
      const double u = static_cast<double>(mix64(split_seed_ ^ mix64(global_row_)) >> 11) * 0x1.0p-53;
      sink = u < opt_.test_fraction ? 1 : 0;
    }
    Sink& s = sinks_[static_cast<size_t>(sink)];
    const double y = rows.labels[r];
    if (label_set_small_) ++s.label_counts[y];
    s.label_min = std::min(s.label_min, y);
    s.label_max = std::max(s.label_max, y);
    s.label_sum += y;
    const uint64_t b = rows.offsets[r], e = rows.offsets[r + 1];
    const double sq = pb.row_sq_norm[r];  // computed by the (parallel) parse
    s.sq_max = std::max(s.sq_max, sq);
    s.sq_sum += sq;
    s.empty_rows += b == e;
    ++s.rows;
    if (s.shuffler) {
      AGLD_RETURN_IF_ERROR(s.shuffler->add(rows, r, global_row_));
    } else if (sink != run_sink) {
      if (run_sink >= 0) route_rows(w, run_sink, rows, run_start, r);
      run_sink = sink;
      run_start = r;
    }
    ++global_row_;
  }
  if (run_sink >= 0 && !sinks_[static_cast<size_t>(run_sink)].shuffler) {
    route_rows(w, run_sink, rows, run_start, n);
  }
  report_progress(false);
  return Status::ok();
}

// Appends an encoded chunk to its output and counts its rows' features.
Status Converter::add_chunk(Sink& s, const Sealed& c) {
  const SparseRows& rows = c.rows ? *c.rows : c.own;
  const uint64_t b = rows.offsets[c.r0], e = rows.offsets[c.r1];
  try {
    s.features.add(rows.indices.data() + b, rows.values.data() + b, e - b);
    if (detect_fields()) s.fields.add(rows, c.r0, c.r1);
  } catch (const std::bad_alloc&) {
    return Status::io_error(s.path + ": no memory for the per-feature statistics (" +
                            std::to_string(s.features.mapped_bytes() >> 20) + " MiB so far)");
  }
  return s.writer->add_chunk(c.encoded);
}

Status Converter::write(Work* w) {
  for (Sealed& s : w->sealed) {
    AGLD_RETURN_IF_ERROR(add_chunk(sinks_[static_cast<size_t>(s.sink)], s));
  }
  w->sealed.clear();
  return Status::ok();
}

void Converter::report_progress(bool force) {
  if (!progress_fn_) return;
  auto now = Clock::now();
  if (!force && now - last_progress_ < std::chrono::milliseconds(250)) return;
  last_progress_ = now;
  ConvertProgress p;
  p.source_bytes = source_bytes_done_ + source_bytes_now_;
  p.source_total = source_total_;
  p.text_bytes = text_bytes_;
  p.rows = global_row_;
  p.seconds = std::chrono::duration<double>(now - start_).count();
  p.phase = phase_;
  progress_fn_(p);
}

Status Converter::drain_shuffler(int sink) {
  Sink& s = sinks_[static_cast<size_t>(sink)];
  AGLD_RETURN_IF_ERROR(s.shuffler->finish());
  bool done = false;
  Status st;
  phase_ = "shuffle";
  report_progress(true);
  tbb::parallel_pipeline(
      2 * threads_ + 1,
      tbb::make_filter<void, Sealed*>(
          tbb::filter_mode::serial_in_order,
          [&](tbb::flow_control& fc) -> Sealed* {
            if (done || failed_) {
              fc.stop();
              return nullptr;
            }
            auto chunk = new Sealed{sink, {}, nullptr, 0, 0, {}};
            Status ns = s.shuffler->next(&chunk->own, opt_.chunk_rows, opt_.chunk_bytes, &done);
            chunk->r1 = chunk->own.rows();
            if (!ns.is_ok()) set_error(ns);
            if (!ns.is_ok() || chunk->r1 == 0) {
              delete chunk;
              fc.stop();
              return nullptr;
            }
            report_progress(false);
            return chunk;
          }) &
          tbb::make_filter<Sealed*, Sealed*>(
              tbb::filter_mode::parallel,
              [&](Sealed* c) {
                if (!failed_) {
                  Status es = c->encode(codec_);
                  if (!es.is_ok()) set_error(es);
                }
                return c;
              }) &
          tbb::make_filter<Sealed*, void>(tbb::filter_mode::serial_in_order, [&](Sealed* c) {
            std::unique_ptr<Sealed> owned(c);
            if (failed_) return;
            Status ws = add_chunk(s, *c);
            if (!ws.is_ok()) set_error(ws);
          }));
  report_->shuffle_runs += s.shuffler->runs();
  report_->shuffle_merges += s.shuffler->merges();
  report_->shuffle_disk_bytes += s.shuffler->peak_disk_bytes();
  s.shuffler.reset();  // its memory and temporary files are not needed any more
  return error_;
}

Status Converter::finish() {
  const int base = parse_opt_.index_base;
  report_->index_base = base;
  uint64_t d = opt_.features ? *opt_.features : max_index_;
  if (!declared_.empty()) d = std::max(d, declared_.back().first + declared_.back().count);
  report_->fields_declared = fields_spec_.mode == FieldsSpec::Mode::kDeclared;
  LabelKind kind;
  double positive = 1;
  if (opt_.task == "regression") {
    kind = LabelKind::kReal;
  } else if (label_set_small_ && is_binary_set(label_set_) && global_row_ > 0) {
    kind = LabelKind::kBinary;
    positive = std::find(label_set_.begin(), label_set_.end(), 2.0) != label_set_.end() ? 2.0 : 1.0;
  } else if (opt_.task == "binary") {
    kind = LabelKind::kBinary;  // no rows at all
  } else {
    kind = LabelKind::kReal;
  }
  report_->label_kind = kind;
  report_->features = d;
  report_->skipped_lines = skipped_;
  for (size_t k = 0; k < sinks_.size(); ++k) {
    Sink& s = sinks_[k];
    if (s.shuffler) {
      try {
        s.features.reserve(d);  // d is known now: no growing while the rows drain
        if (detect_fields()) s.fields.reserve(d);
      } catch (const std::bad_alloc&) {
        return Status::io_error(s.path + ": no memory for the per-feature statistics of " +
                                std::to_string(d) + " features");
      }
      AGLD_RETURN_IF_ERROR(drain_shuffler(static_cast<int>(k)));
    } else if (s.building.rows() > 0) {
      Sealed last = Sealed::owning(static_cast<int>(k), std::move(s.building));
      AGLD_RETURN_IF_ERROR(last.encode(codec_));
      AGLD_RETURN_IF_ERROR(add_chunk(s, last));
      s.building.clear();
    }
    StoreMeta m;
    m.features = d;
    m.label_kind = kind;
    m.label_positive = positive;
    if (kind == LabelKind::kBinary) {
      for (auto& [label, count] : s.label_counts) m.label_counts.emplace_back(label, count);
    } else if (s.rows > 0) {
      m.label_min = s.label_min;
      m.label_max = s.label_max;
      m.label_mean = s.label_sum / static_cast<double>(s.rows);
    }
    m.row_sq_norm_max = s.sq_max;
    m.row_sq_norm_sum = s.sq_sum;
    m.empty_rows = s.empty_rows;
    m.index_base = base;
    m.sources = sources_;
    StoreOptions& o = m.options;
    o.compression = codec_.codec == Codec::kNone ? "none" : "zstd";
    o.level = codec_.codec == Codec::kNone ? 0 : codec_.level;
    o.chunk_rows = opt_.chunk_rows;
    o.chunk_bytes = opt_.chunk_bytes;
    o.index_base = opt_.index_base;
    o.features = opt_.features;
    o.task = opt_.task;
    o.shuffle = opt_.shuffle;
    o.seed = opt_.seed;
    o.test_fraction = opt_.test_fraction;
    o.part = s.part;
    o.skip_bad_lines = opt_.skip_bad_lines;
    o.raw_literals = codec_.raw_literals;  // set only with zstd (validate)
    m.skipped_lines = skipped_;
    m.created_by = std::string("agld ") + kVersion;
    if (detect_fields()) {
      m.fields = s.fields.fields(s.features, d, s.rows);
    } else {
      m.fields = declared_;  // checked against every row
    }
    (k == 0 ? report_->fields : report_->test_fields) = m.fields;
    s.writer->record_feature_stats(
        [&s](uint64_t first, uint64_t n, uint64_t* count, double* sum_sq, float* max_abs) {
          s.features.fill(first, n, count, sum_sq, max_abs);
        });
    AGLD_RETURN_IF_ERROR(s.writer->finish_uncommitted(std::move(m)));
    // What the statistics held beyond --memory, when d was not known at the start.
    const uint64_t held = FeatureAccumulator::kBytesPerFeature * d;
    report_->feature_stats_bytes =
        opt_.shuffle ? std::max(report_->feature_stats_bytes, held)
                                   : report_->feature_stats_bytes + held;
    if (detect_fields()) {
      const uint64_t detect = FieldDetector::kBytesPerFeature * d;
      report_->field_detect_bytes = opt_.shuffle ? std::max(report_->field_detect_bytes, detect)
                                                 : report_->field_detect_bytes + detect;
    }
    s.features.release();
    s.fields.release();
  }
  if (!opt_.features && report_->feature_stats_bytes > 0) {
    const uint64_t pipeline = (2 * threads_ + 2) * 4 * kBlockBytes;
    const uint64_t rest = opt_.shuffle ? shuffle_memory_ / 2 + drain_bytes_ : pipeline;
    const uint64_t held = report_->feature_stats_bytes + report_->field_detect_bytes;
    if (held + rest > opt_.memory) {
      report_->notes.push_back(fmt::format(
          "the per-feature statistics of {} features took {}M, past --memory {}M with the rest "
          "of the conversion; --features {} would have counted them in from the start",
          d, held >> 20, opt_.memory >> 20, d));
    }
  }
  // Both outputs are complete: publish them. Two renames cannot be made atomic together: if
  // a later commit fails, remove the outputs already published, so that a failure leaves
  // neither (whatever they replaced is gone by then).
  for (size_t k = 0; k < sinks_.size(); ++k) {
    Status st = sinks_[k].writer->commit();
    if (!st.is_ok()) {
      for (size_t j = 0; j < k; ++j) {
        std::error_code ec;
        std::filesystem::remove(sinks_[j].path, ec);
      }
      return st;
    }
  }
  report_->rows = sinks_[0].writer->rows();
  report_->nnz = sinks_[0].writer->nnz();
  report_->output_bytes = sinks_[0].writer->bytes_written();
  if (sinks_.size() == 2) {
    report_->test_rows = sinks_[1].writer->rows();
    report_->nnz += sinks_[1].writer->nnz();
    report_->output_bytes += sinks_[1].writer->bytes_written();
  }
  return Status::ok();
}

Status Converter::run() {
  AGLD_RETURN_IF_ERROR(validate());
  AGLD_RETURN_IF_ERROR(open_sinks());
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads_);
  const size_t tokens = 2 * threads_ + 2;
  std::vector<std::unique_ptr<Work>> pool;
  std::vector<Work*> free_list;
  std::mutex pool_mu;
  for (size_t i = 0; i < tokens; ++i) {
    pool.push_back(std::make_unique<Work>());
    free_list.push_back(pool.back().get());
  }
  auto release = [&](Work* w) {
    std::lock_guard<std::mutex> lock(pool_mu);
    free_list.push_back(w);
  };
  tbb::parallel_pipeline(
      tokens,
      tbb::make_filter<void, Work*>(
          tbb::filter_mode::serial_in_order,
          [&](tbb::flow_control& fc) -> Work* {
            if (failed_) {
              fc.stop();
              return nullptr;
            }
            Work* w;
            {
              std::lock_guard<std::mutex> lock(pool_mu);
              w = free_list.back();
              free_list.pop_back();
            }
            bool have = false;
            Status st = read_block(w, &have);
            if (!st.is_ok()) set_error(st);
            if (!have) {
              release(w);
              fc.stop();
              return nullptr;
            }
            return w;
          }) &
          tbb::make_filter<Work*, Work*>(
              tbb::filter_mode::parallel,
              [&](Work* w) {
                if (failed_) return w;
                Status st = load_block(w);
                if (!st.is_ok()) {
                  set_error(st);
                  return w;
                }
                // Line numbers come out relative to the block; assembling makes them absolute.
                parse_block(w->text.view(), 1, parse_opt_, &w->parsed);
                check_declared_fields(declared_, parse_opt_.index_base, opt_.skip_bad_lines, &w->parsed);
                return w;
              }) &
          tbb::make_filter<Work*, Work*>(
              tbb::filter_mode::serial_in_order,
              [&](Work* w) {
                if (!failed_) {
                  Status st = assemble(w);
                  if (!st.is_ok()) set_error(st);
                }
                return w;
              }) &
          tbb::make_filter<Work*, Work*>(
              tbb::filter_mode::parallel,
              [&](Work* w) {
                for (Sealed& s : w->sealed) {
                  if (failed_) break;
                  Status st = s.encode(codec_);
                  if (!st.is_ok()) set_error(st);
                }
                return w;
              }) &
          tbb::make_filter<Work*, void>(tbb::filter_mode::serial_in_order, [&](Work* w) {
            if (!failed_) {
              Status st = write(w);
              if (!st.is_ok()) set_error(st);
            }
            w->sealed.clear();
            release(w);
          }));
  if (failed_) return error_;
  AGLD_RETURN_IF_ERROR(finish());
  report_progress(true);
  report_->text_bytes = text_bytes_;
  report_->source_bytes = source_bytes_done_;
  report_->seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  return Status::ok();
}

}  // namespace

Status convert(const ConvertOptions& opt, ConvertReport* report, const ConvertProgressFn& progress,
               FileSystem& fs) {
  *report = ConvertReport{};
  Converter c(opt, report, progress, fs);
  return c.run();
}

}  // namespace agld
