#include "agld/run_output.hpp"

#include "agld/run_summary.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>

namespace agld {

struct RunWriter::Out {
  std::unique_ptr<WritableFile> file;
  std::string buffer;
};

// A run that did not finish leaves nothing: its uncommitted files go with outs_, then the
// directories create() made, if they are empty (a directory that was there stays).
RunWriter::~RunWriter() {
  if (finished_) return;
  outs_.clear();
  for (const std::string& d : created_) {
    std::error_code ec;
    std::filesystem::remove(d, ec);  // only if empty; an error leaves it
  }
}

std::string draws_file_name(uint64_t id) { return fmt::format("draws_{}.csv", id); }

std::vector<std::string> tracked_names(const ResolvedSample& run) {
  std::vector<std::string> names;
  for (uint64_t j : run.track) {
    names.push_back(coordinate_name(j, run.dim, run.given.intercept));
  }
  return names;
}

Status RunWriter::create(const std::string& dir, FileSystem& fs, std::unique_ptr<RunWriter>* out) {
  std::unique_ptr<RunWriter> w(new RunWriter());
  // The directories that do not exist yet, deepest first: what the destructor removes.
  std::error_code ec;
  for (std::filesystem::path p = std::filesystem::absolute(dir, ec); !ec && p.has_relative_path(); p = p.parent_path()) {
    if (std::filesystem::exists(p, ec) || ec) break;
    w->created_.push_back(p.string());
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::io_error(dir + ": cannot create the run directory: " + ec.message());
  // A run killed in the instant its checkpoint replaced the previous one left the new one under
  // a temporary name (docs/reliability.md): the directory is the run's, so it goes.
  fs.remove_stale_temporaries(dir);
  w->dir_ = dir;
  w->fs_ = &fs;
  *out = std::move(w);
  return Status::ok();
}

Status RunWriter::flush(Out& o, bool all) {
  if (o.buffer.empty() || (!all && o.buffer.size() < (1u << 20))) return Status::ok();
  Status st = o.file->append({reinterpret_cast<const std::byte*>(o.buffer.data()), o.buffer.size()});
  o.buffer.clear();
  return st;
}

Status RunWriter::open(const std::string& name, std::unique_ptr<Out>* out) {
  auto o = std::make_unique<Out>();
  Status st = fs_->create_atomic(dir_ + "/" + name, &o->file);
  if (st.is_ok()) *out = std::move(o);
  return st;
}

// Every chain's draws file, new, with its head: the comment lines, its chain, the column names.
Status RunWriter::open_draws(const ResolvedSample& run, const std::vector<std::string>& comments) {
  std::string head = "lp__";
  for (const std::string& n : tracked_names(run)) head += "," + n;
  for (size_t c = 0; c < chains_; ++c) {
    std::unique_ptr<Out> o;
    Status st = open(draws_file_name(first_chain_ + c), &o);
    if (!st.is_ok()) return st;
    std::string& d = o->buffer;
    for (const std::string& line : comments) d += "# " + line + "\n";
    d += fmt::format("# chain = {} of {} (ids {} to {})\n", first_chain_ + c, chains_, first_chain_,
                     first_chain_ + chains_ - 1);
    d += head + "\n";
    // The file it replaces (a stage's, now burn-in) goes uncommitted.
    auto at = std::find_if(outs_.begin(), outs_.end(), [&](const auto& p) { return p.get() == draws_[c]; });
    draws_[c] = o.get();
    if (at != outs_.end()) {
      *at = std::move(o);
    } else {
      outs_.push_back(std::move(o));
    }
  }
  return Status::ok();
}

Status RunWriter::start(const ResolvedSample& run, const std::vector<std::string>& comments) {
  first_chain_ = run.given.chain_id;
  chains_ = static_cast<size_t>(run.given.chains);
  draws_.assign(chains_, nullptr);
  Status st = open_draws(run, comments);
  if (!st.is_ok()) return st;
  std::unique_ptr<Out> metrics;
  st = open("metrics.csv", &metrics);
  if (!st.is_ok()) return st;
  metrics_ = metrics.get();
  outs_.push_back(std::move(metrics));
  std::string& m = metrics_->buffer;
  m += "iteration,seconds,eval_seconds,passes,grad_evals,burn_in,samples,test_loglik,test_accuracy,test_mse";
  for (size_t c = 0; c < chains_; ++c) m += fmt::format(",test_loglik_{}", first_chain_ + c);
  m += ",bytes_read,memory_bytes\n";
  return Status::ok();
}

namespace {
// NaN as "NaN" (read as missing by pandas and R), otherwise enough digits to round-trip
// a float64 to 9 significant digits.
void put(std::string& s, double v) {
  if (std::isnan(v)) {
    s += "NaN";
  } else {
    fmt::format_to(std::back_inserter(s), "{:.9g}", v);
  }
}
}  // namespace

Status RunWriter::draw(const DrawRecord& r) {
  if (r.chain < first_chain_ || r.chain - first_chain_ >= chains_) {
    return Status::internal("a draw of chain " + std::to_string(r.chain) + ", which this run does not have");
  }
  Out& out = *draws_[r.chain - first_chain_];
  std::string& s = out.buffer;
  put(s, r.lp);
  for (double v : r.tracked) {
    s += ',';
    put(s, v);
  }
  s += '\n';
  return flush(out, false);
}

Status RunWriter::eval(const EvalRecord& e) {
  std::string& s = metrics_->buffer;
  fmt::format_to(std::back_inserter(s), "{},{:.6f},{:.6f},{:.9g},{},{},{},", e.iteration, e.seconds,
                 e.eval_seconds, e.passes, e.grad_evals, e.burn_in ? 1 : 0, e.samples);
  put(s, e.test_loglik);
  s += ',';
  put(s, e.test_accuracy);
  s += ',';
  put(s, e.test_mse);
  for (size_t c = 0; c < chains_; ++c) {
    s += ',';
    put(s, c < e.chain_test_loglik.size() ? e.chain_test_loglik[c] : std::nan(""));
  }
  fmt::format_to(std::back_inserter(s), ",{},{}\n", e.bytes_read, e.memory_bytes);
  return flush(*metrics_, false);
}

namespace {
// A (d, columns) float64 table streamed in slices: d may be 54.7M (875 MB a column pair).
Status write_table(WritableFile& f, uint64_t d, const std::vector<const std::vector<double>*>& columns) {
  const uint64_t cols = columns.size();
  const std::string head = encode_npy_f64(d, cols, {});
  Status st = f.append({reinterpret_cast<const std::byte*>(head.data()), head.size()});
  std::vector<double> slice;
  constexpr uint64_t kSlice = 1 << 16;
  for (uint64_t j0 = 0; st.is_ok() && j0 < d; j0 += kSlice) {
    const uint64_t j1 = std::min(d, j0 + kSlice);
    slice.resize(cols * (j1 - j0));
    for (uint64_t j = j0; j < j1; ++j) {
      for (uint64_t c = 0; c < cols; ++c) slice[cols * (j - j0) + c] = (*columns[c])[j];
    }
    st = f.append({reinterpret_cast<const std::byte*>(slice.data()), slice.size() * sizeof(double)});
  }
  return st;
}
}  // namespace

Status RunWriter::finish(const SampleResult& result, const std::string& config_json) {
  for (Out* o : draws_) {
    fmt::format_to(std::back_inserter(o->buffer), "#\n#  Elapsed Time: {:.3f} seconds (Total)\n#  Kept states: {}{}\n",
                   result.seconds, result.draws, result.stopped_early ? " (stopped early)" : "");
  }
  return finish_tables({{"posterior.npy", {&result.mean, &result.sd}},
                        {"diagnostics.npy", {&result.rhat, &result.ess, &result.mcse}}},
                       config_json);
}

Status RunWriter::finish_tables(const std::vector<Table>& tables, const std::string& config_json) {
  std::vector<std::unique_ptr<WritableFile>> files(tables.size());
  std::unique_ptr<WritableFile> config;
  Status st;
  for (size_t t = 0; t < tables.size() && st.is_ok(); ++t) st = fs_->create_atomic(dir_ + "/" + tables[t].name, &files[t]);
  if (st.is_ok()) st = fs_->create_atomic(dir_ + "/config.json", &config);
  if (!st.is_ok()) return st;
  for (size_t t = 0; t < tables.size() && st.is_ok(); ++t) {
    const uint64_t d = tables[t].columns.empty() ? 0 : tables[t].columns.front()->size();
    st = write_table(*files[t], d, tables[t].columns);
  }
  if (st.is_ok()) st = config->append({reinterpret_cast<const std::byte*>(config_json.data()), config_json.size()});
  for (auto& o : outs_) {
    if (st.is_ok()) st = flush(*o, true);
  }
  if (!st.is_ok()) return st;
  for (auto& o : outs_) {
    st = o->file->commit();
    if (!st.is_ok()) return st;
  }
  for (auto& f : files) {
    st = f->commit();
    if (!st.is_ok()) return st;
  }
  st = config->commit();
  if (st.is_ok()) finished_ = true;
  return st;
}

Status RunWriter::checkpoint(const std::function<Status(WritableFile&)>& save, uint64_t* bytes) {
  std::unique_ptr<WritableFile> f;
  Status st = fs_->create_atomic(checkpoint_path(), &f);
  if (st.is_ok()) st = save(*f);
  if (st.is_ok()) st = f->commit();
  if (st.is_ok() && bytes) *bytes = f->size();
  return st;  // on failure f goes uncommitted: the previous checkpoint stays
}

}  // namespace agld
