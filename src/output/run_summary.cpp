// Reading a run directory back and summarizing it (`agld summary`; include/agld/run_summary.hpp).
#include "agld/run_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>

#include "agld/run_output.hpp"
#include "diagnostics/draws_diagnostics.hpp"
#include "common/json_get.hpp"

namespace agld {

std::string coordinate_name(uint64_t j, uint64_t d, bool intercept) {
  return intercept && j + 1 == d ? "intercept" : fmt::format("theta.{}", j + 1);
}

RowsClassSummary rows_class_summary(const RowsClass& c, uint64_t d, bool intercept) {
  RowsClassSummary s{c.min_rows, c.max_rows, c.intercept, c.coordinates, c.with_rhat, c.rhat_above,
                     c.rhat_above_1_1, c.max_rhat, ""};
  if (std::isfinite(c.max_rhat)) s.max_rhat_name = coordinate_name(c.max_rhat_at, d, intercept);
  return s;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Opened {
  std::unique_ptr<ReadableFile> file;
  std::string_view text;
};

Status open_whole(FileSystem& fs, const std::string& dir, const std::string& name, Opened* out) {
  Status st = fs.open_readable(dir + "/" + name, &out->file);
  if (!st.is_ok()) {
    if (st.code() == Status::Code::kNotFound) {
      return Status::not_found(fmt::format("{}: not a complete agld run directory: {} is missing", dir, name));
    }
    return st;
  }
  ByteSpan all;
  st = out->file->view(0, out->file->size(), &all);
  if (!st.is_ok()) return st;
  out->text = {reinterpret_cast<const char*>(all.data()), all.size()};
  return Status::ok();
}

// The configuration a summary needs, checked.
struct RunConfig {
  std::string method, model;
  uint64_t chains = 0, first_chain = 1, dim = 0, draws = 0, iterations = 0, burn_in = 0, thin = 1;
  bool intercept = false, stopped_early = false, sampled = false;
  uint64_t stages = 0, prior_exact = 0;
  std::string stop_reason;
  std::vector<std::string> draws_files, track;
  bool rao_blackwell = false;
  uint64_t rb_samples = 0, rb_means = 0, rb_sds = 0;
  std::vector<RowsClassSummary> by_rows;
};

Status read_config(const std::string& dir, std::string_view text, RunConfig* c) {
  const std::string where = dir + "/config.json";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::corruption(fmt::format("{}: not valid JSON (byte {}): {}", where, e.byte, e.what()));
  } catch (const nlohmann::json::exception& e) {  // a number out of range (1e999) is not a parse_error
    return Status::corruption(fmt::format("{}: not valid JSON: {}", where, e.what()));
  }
  try {
    c->method = json_at<std::string>(j, "method");
    c->model = json_at<std::string>(j, "model");
    c->chains = json_at<uint64_t>(j, "chains");
    c->first_chain = json_at<uint64_t>(j, "chain_id");
    c->dim = json_at<uint64_t>(j, "dim");
    c->intercept = json_at<bool>(j, "intercept");
    c->iterations = json_at<uint64_t>(j, "iterations");
    c->burn_in = json_at<uint64_t>(j, "burn_in");
    c->thin = json_at<uint64_t>(j, "thin");
    c->draws_files = json_at<std::vector<std::string>>(j, "draws_files");
    c->track = json_at<std::vector<std::string>>(j, "track");
    const nlohmann::json& r = j.at("result");
    c->draws = json_at<uint64_t>(r, "draws");
    c->stopped_early = json_at<bool>(r, "stopped_early");
    if (r.contains("prior_exact")) c->prior_exact = json_at<uint64_t>(r, "prior_exact");
    if (j.contains("until_mixed") && json_at<bool>(j.at("until_mixed"), "on")) {  // runs before stages have none
      c->stages = json_at<uint64_t>(r, "stages");
      c->stop_reason = json_at<std::string>(r, "stop_reason");
    }
    const nlohmann::json& diagnostics = j.at("diagnostics");
    c->sampled = diagnostics.at("coordinates").get<std::string>() != "all";
    if (diagnostics.contains("by_rows")) {  // runs before it have none
      for (const nlohmann::json& k : diagnostics.at("by_rows")) {
        RowsClassSummary rc;
        const auto rows = json_at<std::vector<uint64_t>>(k, "rows");
        if (rows.size() != 2 || rows[0] > rows[1]) {
          return Status::corruption(where + ": not the configuration of an agld run: diagnostics.by_rows: \"rows\" is not [min, max]");
        }
        rc.min_rows = rows[0];
        rc.max_rows = rows[1];
        rc.intercept = json_at<bool>(k, "intercept");
        rc.coordinates = json_at<uint64_t>(k, "coordinates");
        rc.with_rhat = json_at<uint64_t>(k, "with_rhat");
        rc.rhat_above = json_at<uint64_t>(k, "rhat_above_1_01");
        rc.rhat_above_1_1 = json_at<uint64_t>(k, "rhat_above_1_1");
        rc.max_rhat = k.at("max_rhat").is_null() ? kNaN : json_at<double>(k, "max_rhat");
        if (!k.at("max_rhat_coordinate").is_null()) rc.max_rhat_name = json_at<std::string>(k, "max_rhat_coordinate");
        c->by_rows.push_back(std::move(rc));
      }
    }
    if (r.contains("rao_blackwell")) {  // a run that kept Rao-Blackwellized moments
      const nlohmann::json& rb = r.at("rao_blackwell");
      c->rao_blackwell = true;
      c->rb_samples = json_at<uint64_t>(rb, "conditional_draws");
      c->rb_means = json_at<uint64_t>(rb, "means");
      c->rb_sds = json_at<uint64_t>(rb, "sds");
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::corruption(fmt::format("{}: not the configuration of an agld run: {}", where, e.what()));
  }
  if (c->chains == 0 || c->draws_files.size() != c->chains) {
    return Status::corruption(fmt::format("{}: {} chains but {} draws files", where, c->chains, c->draws_files.size()));
  }
  for (const std::string& f : c->draws_files) {
    if (f.empty() || f.find('/') != std::string::npos) {
      return Status::corruption(fmt::format("{}: a draws file named '{}'", where, f));
    }
  }
  return Status::ok();
}

bool parse_double(std::string_view s, double* v) {
  if (s == "NaN" || s == "nan") {
    *v = kNaN;
    return true;
  }
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// One chain's Stan CSV: the comment lines, the header, one line per kept state, the trailing
// comments. Appends column t's values to columns[t].
Status read_draws(const std::string& path, std::string_view text, const std::string& header, uint64_t draws,
                  std::vector<std::vector<double>>* columns) {
  uint64_t line_no = 0, rows = 0;
  bool seen_header = false, trailer = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      return Status::corruption(fmt::format("{}, line {}: cut short (the line has no end)", path, line_no + 1));
    }
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.front() == '#') {
      if (seen_header) trailer = true;
      continue;
    }
    if (!seen_header) {
      if (line != header) {
        return Status::corruption(fmt::format("{}, line {}: expected the header '{}', found '{}'", path, line_no,
                                              header, line.substr(0, 200)));
      }
      seen_header = true;
      continue;
    }
    if (trailer) {
      return Status::corruption(fmt::format("{}, line {}: a draw after the trailing comments", path, line_no));
    }
    size_t col = 0, at = 0;
    while (true) {
      const size_t comma = line.find(',', at);
      const std::string_view field = line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
      double v = 0;
      if (col >= columns->size() || !parse_double(field, &v)) {
        return Status::corruption(fmt::format("{}, line {}, column {}: expected {} numbers, found '{}'", path, line_no,
                                              col + 1, columns->size(), line.substr(0, 200)));
      }
      (*columns)[col++].push_back(v);
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    if (col != columns->size()) {
      return Status::corruption(fmt::format("{}, line {}: expected {} numbers, found {}", path, line_no,
                                            columns->size(), col));
    }
    ++rows;
  }
  if (!seen_header) return Status::corruption(fmt::format("{}: cut short: no header line", path));
  if (rows != draws || !trailer) {
    return Status::corruption(fmt::format("{}: cut short: {} draws{}, config.json says {}", path, rows,
                                          trailer ? "" : " and no trailing comments", draws));
  }
  return Status::ok();
}

// A (rows, cols) float64 .npy of the run, checked against the run's dimension.
Status open_npy(FileSystem& fs, const std::string& dir, const std::string& name, uint64_t rows, uint64_t cols,
                Opened* file, NpyView* view) {
  Status st = open_whole(fs, dir, name, file);
  if (!st.is_ok()) return st;
  ByteSpan bytes(reinterpret_cast<const std::byte*>(file->text.data()), file->text.size());
  st = decode_npy_f64(bytes, view);
  if (!st.is_ok()) return st.with_context(dir + "/" + name);
  if (view->rows != rows || view->cols != cols) {
    return Status::corruption(fmt::format("{}/{}: shape ({}, {}), expected ({}, {}) for this run", dir, name,
                                          view->rows, view->cols, rows, cols));
  }
  return Status::ok();
}

VectorSummary summarize_vector(const NpyView& diag, const RunConfig& c) {
  VectorSummary v;
  v.dim = c.dim;
  v.sampled = c.sampled;
  v.max_rhat = v.min_ess = kNaN;
  const double low = 100.0 * static_cast<double>(c.chains);
  uint64_t max_at = 0, min_at = 0;
  for (uint64_t j = 0; j < diag.rows; ++j) {
    const double r = diag.at(j, 0), e = diag.at(j, 1);
    if (std::isfinite(r)) {
      ++v.covered;
      if (!(r <= v.max_rhat)) v.max_rhat = r, max_at = j;  // the first NaN too
      if (r > kRhatLimit) ++v.rhat_above;
    }
    if (std::isfinite(e)) {
      if (!(e >= v.min_ess)) v.min_ess = e, min_at = j;
      if (e < low) ++v.ess_below;
    }
  }
  if (std::isfinite(v.max_rhat)) v.max_rhat_name = coordinate_name(max_at, c.dim, c.intercept);
  if (std::isfinite(v.min_ess)) v.min_ess_name = coordinate_name(min_at, c.dim, c.intercept);
  return v;
}

}  // namespace

bool chains_mixed(uint64_t online_with_rhat, uint64_t online_above, std::span<const ColumnSummary> columns) {
  bool any = online_with_rhat > 0;
  for (const ColumnSummary& c : columns) {
    if (!std::isfinite(c.rhat)) continue;
    if (c.rhat > kRhatLimit) return false;
    any = true;
  }
  return any && online_above == 0;
}

ColumnSummary summarize_column(std::string name, std::span<const double> draws, size_t chains) {
  const diagnostics::DrawSummary d = diagnostics::summarize(draws, chains);
  return {std::move(name), d.mean, d.mcse, d.sd, d.q5, d.q50, d.q95, d.ess_bulk, d.ess_tail, d.rhat};
}

Status summarize_run(const std::string& dir, FileSystem& fs, RunSummary* out) {
  Opened config;
  Status st = open_whole(fs, dir, "config.json", &config);
  if (st.code() == Status::Code::kNotFound) {
    return Status::not_found(fmt::format("{}: not an agld run directory (no config.json)", dir));
  }
  if (!st.is_ok()) return st;
  RunConfig c;
  st = read_config(dir, config.text, &c);
  if (!st.is_ok()) return st;

  std::string header = "lp__";
  for (const std::string& n : c.track) header += "," + n;
  std::vector<std::vector<double>> columns(c.track.size() + 1);
  for (const std::string& name : c.draws_files) {
    Opened f;
    st = open_whole(fs, dir, name, &f);
    if (!st.is_ok()) return st;
    st = read_draws(dir + "/" + name, f.text, header, c.draws, &columns);
    if (!st.is_ok()) return st;
  }
  Opened diag_file, post_file;
  NpyView diag, post;
  st = open_npy(fs, dir, "diagnostics.npy", c.dim, 3, &diag_file, &diag);
  if (st.is_ok()) st = open_npy(fs, dir, "posterior.npy", c.dim, 2, &post_file, &post);
  if (!st.is_ok()) return st;

  RunSummary s;
  s.dir = dir;
  s.method = c.method;
  s.model = c.model;
  s.chains = c.chains;
  s.first_chain = c.first_chain;
  s.draws = c.draws;
  s.iterations = c.iterations;
  s.burn_in = c.burn_in;
  s.thin = c.thin;
  s.stopped_early = c.stopped_early;
  s.stages = c.stages;
  s.prior_exact = c.prior_exact;
  s.stop_reason = c.stop_reason;
  s.rao_blackwell = c.rao_blackwell;
  s.rb_samples = c.rb_samples;
  s.rb_means = c.rb_means;
  s.rb_sds = c.rb_sds;
  for (size_t t = 0; t < columns.size(); ++t) {
    s.columns.push_back(summarize_column(t == 0 ? "lp__" : c.track[t - 1], columns[t], c.chains));
  }
  s.vector = summarize_vector(diag, c);
  s.by_rows = std::move(c.by_rows);
  s.mixed = chains_mixed(s.vector.covered, s.vector.rhat_above, s.columns);
  *out = std::move(s);
  return Status::ok();
}

}  // namespace agld
