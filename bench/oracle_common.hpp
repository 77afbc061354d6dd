// What the oracles (bench/linear_oracle.cpp, sparse_oracle.cpp, logistic_oracle.cpp) share:
// every row of a store read once (the intercept's constant feature appended), a run's .npy
// files read back, and how far a run's posterior is from the exact one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "agld/reader.hpp"
#include "agld/run_output.hpp"
#include "agld/store.hpp"

namespace oracle {

// Calls row(indices, values, label) for every row of the store once, in stored order; with
// `intercept`, index `features` and value 1 end every row.
template <typename Row>
agld::Status for_each_row(const agld::Store& store, bool intercept, Row&& row) {
  agld::ReaderOptions o;
  o.order = "ca";
  o.batch_size = 4096;
  o.memory = uint64_t{1} << 30;
  std::unique_ptr<agld::Reader> reader;
  agld::Status st = agld::Reader::open(store, o, &reader);
  if (!st.is_ok()) return st;
  const uint64_t rows = store.meta().rows;
  const uint32_t intercept_index = static_cast<uint32_t>(store.meta().features);
  std::vector<uint32_t> idx;
  std::vector<double> val;
  for (uint64_t seen = 0; seen < rows;) {
    agld::Batch b;
    st = reader->next(&b);
    if (!st.is_ok()) return st;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(b.size(), rows - seen));
    for (size_t i = 0; i < take; ++i) {
      idx.assign(b.row_indices(i).begin(), b.row_indices(i).end());
      val.assign(b.row_values(i).begin(), b.row_values(i).end());
      if (intercept) {
        idx.push_back(intercept_index);
        val.push_back(1.0);
      }
      row(std::span<const uint32_t>(idx), std::span<const double>(val), b.labels[i]);
    }
    seen += take;
  }
  return agld::Status::ok();
}

// A float64 .npy of shape (rows, cols), read and checked as agld summary reads it.
inline bool read_npy(const std::string& path, size_t* rows, size_t* cols, std::vector<double>* data) {
  std::unique_ptr<agld::ReadableFile> f;
  agld::ByteSpan bytes;
  agld::NpyView v;
  if (!agld::FileSystem::local().open_readable(path, &f).is_ok() || !f->view(0, f->size(), &bytes).is_ok() ||
      !agld::decode_npy_f64(bytes, &v).is_ok()) {
    return false;
  }
  *rows = v.rows;
  *cols = v.cols;
  data->resize(v.rows * v.cols);
  std::memcpy(data->data(), v.data.data(), data->size() * sizeof(double));
  return true;
}

// Writes a float64 (rows, cols) .npy, whole or not at all.
inline bool write_npy(const std::string& path, size_t rows, size_t cols, const std::vector<double>& data) {
  const std::string bytes = agld::encode_npy_f64(rows, cols, data);
  std::unique_ptr<agld::WritableFile> f;
  return agld::FileSystem::local().create_atomic(path, &f).is_ok() &&
         f->append(agld::ByteSpan(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size())).is_ok() &&
         f->commit().is_ok();
}

// Writes the posterior (mean, sd) of every coordinate as a float64 (d, 2) .npy, like a run's
// posterior.npy; false (after a line on stderr) if it cannot.
template <typename Vector>
bool write_posterior(const std::string& path, const Vector& mean, const Vector& sd) {
  using Index = decltype(mean.size());
  const auto d = static_cast<size_t>(mean.size());
  std::vector<double> table(2 * d);
  for (size_t j = 0; j < d; ++j) {
    table[2 * j] = mean[static_cast<Index>(j)];
    table[2 * j + 1] = sd[static_cast<Index>(j)];
  }
  if (write_npy(path, d, 2, table)) return true;
  std::fprintf(stderr, "%s: cannot write\n", path.c_str());
  return false;
}

// The q-quantile of v (the order statistic at q (n - 1), rounded down); NaN for none.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A run's posterior.npy (d x 2: mean, sd) and, when it has one, diagnostics.npy (d x 3:
// R-hat, bulk ESS, tail ESS).
struct RunPosterior {
  std::vector<double> post, diag;
  bool has_diag = false;
};
// Reads RUN_DIR's tables for d coordinates; false (after a line on stderr) if posterior.npy is
// not a (d, 2) table.
inline bool read_run(const std::string& dir, size_t d, RunPosterior* run) {
  size_t rows = 0, cols = 0;
  if (!read_npy(dir + "/posterior.npy", &rows, &cols, &run->post) || rows != d || cols != 2) {
    std::fprintf(stderr, "%s/posterior.npy: not a (%zu, 2) table\n", dir.c_str(), d);
    return false;
  }
  run->has_diag = read_npy(dir + "/diagnostics.npy", &rows, &cols, &run->diag) && rows == d && cols == 3;
  return true;
}

// How far the run is from the exact posterior (mean[j], sd[j] for each coordinate j): the mean
// error in exact sds (median, 90 %, max), the fractions within 0.1 and 0.5 sd, the sd ratio run
// / exact (5 %, median, 95 %), the fraction within issue #15's target (mean within 0.1 sd AND
// sd within 10 %) and the run's R-hat, into *out; printed too unless quiet.
template <typename Vector>
void compare(const RunPosterior& run, const Vector& mean, const Vector& sd, nlohmann::json* out, bool quiet) {
  using Index = decltype(mean.size());
  const auto d = static_cast<size_t>(mean.size());
  std::vector<double> z(d), ratio(d), rhat;
  size_t within01 = 0, within05 = 0, on_target = 0, rhat_above = 0;
  for (size_t j = 0; j < d; ++j) {
    const auto e = static_cast<Index>(j);
    z[j] = std::abs(run.post[2 * j] - mean[e]) / sd[e];
    ratio[j] = run.post[2 * j + 1] / sd[e];
    within01 += z[j] <= 0.1;
    within05 += z[j] <= 0.5;
    on_target += z[j] <= 0.1 && std::abs(ratio[j] - 1) <= 0.1;
    if (run.has_diag && std::isfinite(run.diag[3 * j])) {
      rhat.push_back(run.diag[3 * j]);
      rhat_above += run.diag[3 * j] > 1.01;
    }
  }
  const auto fraction = [d](size_t count) { return static_cast<double>(count) / static_cast<double>(d); };
  (*out)["mean_error_sd"] = {{"median", quantile(z, 0.5)}, {"q90", quantile(z, 0.9)}, {"max", quantile(z, 1.0)}};
  (*out)["within_0_1_sd"] = fraction(within01);
  (*out)["within_0_5_sd"] = fraction(within05);
  (*out)["within_target"] = fraction(on_target);
  (*out)["sd_ratio"] = {{"q05", quantile(ratio, 0.05)}, {"median", quantile(ratio, 0.5)}, {"q95", quantile(ratio, 0.95)}};
  (*out)["rhat"] = {{"max", rhat.empty() ? nlohmann::json() : nlohmann::json(quantile(rhat, 1.0))},
                    {"above_1_01", rhat_above}};
  if (quiet) return;
  std::printf("mean error in exact sds: median %.3g, 90%% %.3g, max %.3g; within 0.1 sd %.1f%%, within 0.5 sd %.1f%%\n",
              quantile(z, 0.5), quantile(z, 0.9), quantile(z, 1.0), 100 * fraction(within01), 100 * fraction(within05));
  std::printf("sd ratio (run / exact): 5%% %.3g, median %.3g, 95%% %.3g\n", quantile(ratio, 0.05), quantile(ratio, 0.5),
              quantile(ratio, 0.95));
  std::printf("within target (mean within 0.1 sd and sd within 10%%): %.1f%%\n", 100 * fraction(on_target));
  if (run.has_diag) {
    std::printf("the run's R-hat: max %.4g, %zu of %zu above 1.01\n", rhat.empty() ? NAN : quantile(rhat, 1.0),
                rhat_above, rhat.size());
  }
}

}  // namespace oracle
