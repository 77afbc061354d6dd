// agld gen: determinism, LIBSVM well-formedness, the weights file, and the planted model
// (statistical checks with tolerances from Monte Carlo error; the seed is printed).
#include "agld/gen.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../file/fault_fs.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace gen_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::read_file;
using test::run_agld;
using test::run_shell;
using test::TempDir;

struct Row {
  double label = 0;
  std::vector<uint64_t> indices;
  std::vector<double> values;
};

// Parses LIBSVM text strictly: "label j:v j:v ...\n" per line, indices 1..d strictly
// increasing, values finite. Returns "" or what is wrong (with the line number).
std::string parse_libsvm(const std::string& text, uint64_t d, std::vector<Row>* rows) {
  rows->clear();
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    ++line;
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) return "line " + std::to_string(line) + ": no newline";
    std::string_view s(text.data() + pos, eol - pos);
    pos = eol + 1;
    Row r;
    size_t sp = s.find(' ');
    std::string_view label = s.substr(0, sp);
    auto [lp, lec] = std::from_chars(label.data(), label.data() + label.size(), r.label);
    if (lec != std::errc() || lp != label.data() + label.size() || !std::isfinite(r.label)) {
      return "line " + std::to_string(line) + ": bad label '" + std::string(label) + "'";
    }
    while (sp != std::string_view::npos) {
      size_t start = sp + 1;
      sp = s.find(' ', start);
      std::string_view tok = s.substr(start, sp == std::string_view::npos ? sp : sp - start);
      size_t colon = tok.find(':');
      uint64_t j = 0;
      double v = 0;
      if (colon == std::string_view::npos) return "line " + std::to_string(line) + ": no colon";
      auto [jp, jec] = std::from_chars(tok.data(), tok.data() + colon, j);
      auto [vp, vec] = std::from_chars(tok.data() + colon + 1, tok.data() + tok.size(), v);
      if (jec != std::errc() || jp != tok.data() + colon || vec != std::errc() ||
          vp != tok.data() + tok.size() || !std::isfinite(v)) {
        return "line " + std::to_string(line) + ": bad entry '" + std::string(tok) + "'";
      }
      if (j < 1 || j > d) return "line " + std::to_string(line) + ": index out of range";
      if (!r.indices.empty() && j <= r.indices.back()) {
        return "line " + std::to_string(line) + ": indices not strictly increasing";
      }
      r.indices.push_back(j);
      r.values.push_back(v);
    }
    rows->push_back(std::move(r));
  }
  return "";
}

struct Weights {
  double intercept = 0;
  std::vector<uint64_t> features;  // in file order
  std::vector<double> weight;      // indexed by feature (dense; fine for criteo's d)
};

std::string parse_weights(const std::string& text, uint64_t d, Weights* w) {
  const std::string header = "feature,weight\nintercept,";
  if (text.compare(0, header.size(), header) != 0) return "bad header";
  w->weight.assign(d + 1, std::nan(""));
  size_t pos = header.size() - std::string("intercept,").size();
  bool first = true;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) return "no final newline";
    std::string_view s(text.data() + pos, eol - pos);
    pos = eol + 1;
    size_t comma = s.find(',');
    if (comma == std::string_view::npos) return "no comma in '" + std::string(s) + "'";
    double v = 0;
    auto [vp, vec] = std::from_chars(s.data() + comma + 1, s.data() + s.size(), v);
    if (vec != std::errc() || vp != s.data() + s.size() || !std::isfinite(v)) {
      return "bad weight in '" + std::string(s) + "'";
    }
    if (first) {
      w->intercept = v;
      first = false;
      continue;
    }
    uint64_t j = 0;
    auto [jp, jec] = std::from_chars(s.data(), s.data() + comma, j);
    if (jec != std::errc() || jp != s.data() + comma || j < 1 || j > d) {
      return "bad feature in '" + std::string(s) + "'";
    }
    if (!w->features.empty() && j <= w->features.back()) return "features not ascending";
    w->features.push_back(j);
    w->weight[j] = v;
  }
  return "";
}

double dot(const Row& r, const Weights& w) {
  double s = 0;
  for (size_t k = 0; k < r.indices.size(); ++k) s += r.values[k] * w.weight[r.indices[k]];
  return s;
}

constexpr uint64_t kCriteoD = 1000000;
constexpr uint64_t kKdd12D = 54686452;

std::string gen_stdout(const std::string& args) {
  auto r = run_agld("gen --quiet " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  return r.out;
}

TEST(GenTest, ShapeInfo) {
  GenShapeInfo info;
  ASSERT_TRUE(gen_shape_info("criteo", &info).is_ok());
  EXPECT_EQ(info.features, kCriteoD);
  EXPECT_EQ(info.numeric, 13u);
  EXPECT_EQ(info.fields, 26u);
  ASSERT_TRUE(gen_shape_info("kdd12", &info).is_ok());
  EXPECT_EQ(info.features, kKdd12D);
  EXPECT_EQ(info.numeric, 0u);
  EXPECT_EQ(info.fields, 11u);
  EXPECT_EQ(gen_shape_info("mnist", &info).code(), Status::Code::kInvalidArgument);
}

TEST(GenTest, SameSeedSameBytesForAnyThreads) {
  for (std::string shape : {"criteo", "kdd12"}) {
    std::string base = "--shape " + shape + " --rows 9000 --seed 11";
    std::string one = gen_stdout(base + " --threads 1");
    EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 9000);
    EXPECT_EQ(gen_stdout(base + " --threads 2"), one) << shape;
    EXPECT_EQ(gen_stdout(base + " --threads 3"), one) << shape;
    // A prefix of rows is the same as the start of a longer run.
    std::string fewer = gen_stdout("--shape " + shape + " --rows 5000 --seed 11 --threads 2");
    EXPECT_EQ(one.compare(0, fewer.size(), fewer), 0) << shape;
  }
  std::string reg = "--shape criteo --rows 3000 --seed 5 --task regression";
  EXPECT_EQ(gen_stdout(reg + " --threads 1"), gen_stdout(reg + " --threads 2"));
}

TEST(GenTest, DifferentSeedDifferentBytes) {
  std::string a = gen_stdout("--shape criteo --rows 200 --seed 1");
  std::string b = gen_stdout("--shape criteo --rows 200 --seed 2");
  EXPECT_NE(a, b);
  EXPECT_NE(gen_stdout("--shape kdd12 --rows 200 --seed 1"),
            gen_stdout("--shape kdd12 --rows 200 --seed 2"));
  EXPECT_NE(a, gen_stdout("--shape criteo --rows 200 --seed 1 --task regression"));
}

TEST(GenTest, CriteoRowsAreWellFormed) {
  const uint64_t seed = test::test_seed(21);
  const int n = 4000;
  std::string text = gen_stdout("--shape criteo --rows 4000 --seed " + std::to_string(seed));
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(text, kCriteoD, &rows), "");
  ASSERT_EQ(rows.size(), static_cast<size_t>(n));
  double nnz_sum = 0;
  for (const Row& r : rows) {
    ASSERT_TRUE(r.label == 0 || r.label == 1) << r.label;
    int numeric = 0;
    for (size_t k = 0; k < r.indices.size(); ++k) {
      if (r.indices[k] <= 13) {
        ++numeric;
        EXPECT_GT(r.values[k], 0);
      } else {
        EXPECT_EQ(r.values[k], 1);
      }
    }
    EXPECT_EQ(r.indices.size() - numeric, 26u);  // one per categorical field
    nnz_sum += static_cast<double>(r.indices.size());
  }
  // nnz = 26 + Binomial(13, 0.8): mean 36.4, sd sqrt(13 * 0.16) per row.
  double mean = nnz_sum / n, tol = 5 * std::sqrt(13 * 0.16 / n);
  EXPECT_NEAR(mean, 36.4, tol);
  double bytes_per_row = static_cast<double>(text.size()) / n;
  EXPECT_GT(bytes_per_row, 280);
  EXPECT_LT(bytes_per_row, 380);
}

TEST(GenTest, Kdd12RowsAreWellFormed) {
  const uint64_t seed = test::test_seed(22);
  std::string text = gen_stdout("--shape kdd12 --rows 3000 --seed " + std::to_string(seed));
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(text, kKdd12D, &rows), "");
  ASSERT_EQ(rows.size(), 3000u);
  for (const Row& r : rows) {
    ASSERT_TRUE(r.label == 0 || r.label == 1);
    ASSERT_EQ(r.indices.size(), 11u);
    for (double v : r.values) EXPECT_EQ(v, 1);
  }
}

// The positive rate over n rows: binomial noise around the population rate, which itself
// misses the target by the pilot's sampling error (20000 rows; var(sigmoid) <= p (1 - p)).
void expect_positive_rate(const std::string& shape, double target, uint64_t seed) {
  const int n = 4000;
  std::string text = gen_stdout("--shape " + shape + " --rows " + std::to_string(n) + " --seed " +
                                std::to_string(seed));
  double positives = 0;
  for (size_t pos = 0; pos < text.size(); pos = text.find('\n', pos) + 1) {
    positives += text[pos] == '1' ? 1 : 0;
  }
  double rate = positives / n;
  double sd = std::sqrt(target * (1 - target) * (1.0 / n + 1.0 / 20000));
  EXPECT_NEAR(rate, target, 4 * sd) << shape << " seed " << seed;
}

TEST(GenTest, PositiveRateMatchesTarget) {
  const uint64_t seed = test::test_seed(23);
  expect_positive_rate("criteo", 0.25, seed);
  expect_positive_rate("kdd12", 0.04, seed);
}

TEST(GenTest, WeightsFileListsExactlyTheFeaturesThatOccur) {
  TempDir dir;
  std::string out = dir.file("c.svm");
  auto r = run_agld("gen --quiet --shape criteo --rows 2000 --seed 3 -o '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(read_file(out), kCriteoD, &rows), "");
  std::set<uint64_t> occurring;
  for (const Row& row : rows) occurring.insert(row.indices.begin(), row.indices.end());
  Weights w;
  ASSERT_EQ(parse_weights(read_file(out + ".weights.csv"), kCriteoD, &w), "");
  EXPECT_EQ(std::set<uint64_t>(w.features.begin(), w.features.end()), occurring);
  EXPECT_EQ(w.features.size(), occurring.size());
  EXPECT_EQ(test::list_dir(dir.path()), (std::vector<std::string>{"c.svm", "c.svm.weights.csv"}));

  // Weights beside stdout output only when asked for, and then the same ones.
  std::string wpath = dir.file("w.csv");
  auto s = run_agld("gen --quiet --shape criteo --rows 2000 --seed 3 --weights '" + wpath + "'");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.out, read_file(out));
  EXPECT_EQ(read_file(wpath), read_file(out + ".weights.csv"));
}

TEST(GenTest, LogisticLabelsFollowThePlantedWeights) {
  const uint64_t seed = test::test_seed(24);
  TempDir dir;
  std::string out = dir.file("c.svm");
  auto r = run_agld("gen --quiet --shape criteo --rows 5000 --seed " + std::to_string(seed) +
                    " -o '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(read_file(out), kCriteoD, &rows), "");
  Weights w;
  ASSERT_EQ(parse_weights(read_file(out + ".weights.csv"), kCriteoD, &w), "");
  std::vector<double> eta(rows.size()), p(rows.size());
  double sum_eta = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    eta[i] = dot(rows[i], w);
    sum_eta += eta[i];
    p[i] = 1 / (1 + std::exp(-(eta[i] + w.intercept)));
  }
  // sd(x.w) is calibrated to 1.25 on a pilot of 20000 rows.
  double mean_eta = sum_eta / static_cast<double>(rows.size()), ss = 0;
  for (double e : eta) ss += (e - mean_eta) * (e - mean_eta);
  EXPECT_NEAR(std::sqrt(ss / static_cast<double>(rows.size())), 1.25, 0.1);
  // Given the rows, y_i ~ Bernoulli(p_i) independently: sum (y - p) has variance
  // sum p (1 - p), overall and within the rows of high and of low p.
  double median = [&] {
    std::vector<double> q = p;
    std::nth_element(q.begin(), q.begin() + q.size() / 2, q.end());
    return q[q.size() / 2];
  }();
  double resid[3] = {0, 0, 0}, var[3] = {0, 0, 0};
  double p_pos = 0, p_neg = 0, n_pos = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    int half = p[i] >= median ? 1 : 2;
    for (int g : {0, half}) {
      resid[g] += rows[i].label - p[i];
      var[g] += p[i] * (1 - p[i]);
    }
    (rows[i].label == 1 ? p_pos : p_neg) += p[i];
    n_pos += rows[i].label;
  }
  for (int g = 0; g < 3; ++g) {
    EXPECT_LT(std::abs(resid[g]), 4 * std::sqrt(var[g])) << "group " << g << " seed " << seed;
  }
  // The planted model separates the classes: positives have higher p on average.
  EXPECT_GT(p_pos / n_pos, p_neg / (static_cast<double>(rows.size()) - n_pos) + 0.1);
}

TEST(GenTest, RegressionResidualsAreStandardNormal) {
  const uint64_t seed = test::test_seed(25);
  TempDir dir;
  std::string out = dir.file("r.svm");
  const int n = 4000;
  auto r = run_agld("gen --quiet --shape criteo --task regression --rows 4000 --seed " +
                    std::to_string(seed) + " -o '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(read_file(out), kCriteoD, &rows), "");
  Weights w;
  ASSERT_EQ(parse_weights(read_file(out + ".weights.csv"), kCriteoD, &w), "");
  EXPECT_EQ(w.intercept, 0);
  double sum = 0, sum_sq = 0;
  bool some_non_integer = false;
  for (const Row& row : rows) {
    double e = row.label - dot(row, w) - w.intercept;
    sum += e;
    sum_sq += e * e;
    some_non_integer |= row.label != std::floor(row.label);
  }
  EXPECT_TRUE(some_non_integer);
  double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0, 4 / std::sqrt(n)) << "seed " << seed;
  EXPECT_NEAR(var, 1, 4 * std::sqrt(2.0 / n)) << "seed " << seed;
}

TEST(GenTest, ZstdOutputDecompressesToThePlainBytes) {
  TempDir dir;
  std::string plain = dir.file("x.svm"), packed = dir.file("x.svm.zst");
  std::string packed2 = dir.file("y.svm.zst");
  std::string common = "gen --quiet --shape kdd12 --rows 20000 --seed 9 ";
  ASSERT_EQ(run_agld(common + "--threads 2 -o '" + plain + "'").exit_code, 0);
  ASSERT_EQ(run_agld(common + "--threads 2 -o '" + packed + "'").exit_code, 0);
  ASSERT_EQ(run_agld(common + "--threads 1 -o '" + packed2 + "'").exit_code, 0);
  std::string text = read_file(plain);
  std::string z = read_file(packed);
  ASSERT_GE(z.size(), 4u);
  EXPECT_EQ(z.substr(0, 4), std::string("\x28\xb5\x2f\xfd"));
  EXPECT_LT(z.size(), text.size() / 2);
  auto d = run_shell("zstd -dc '" + packed + "'");
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(d.out == text);
  // The compressed bytes, too, do not depend on the number of threads.
  EXPECT_TRUE(read_file(packed2) == z);
  EXPECT_EQ(read_file(packed + ".weights.csv"), read_file(plain + ".weights.csv"));
}

TEST(GenTest, BadOptionsExit64) {
  for (std::string args : {"--shape mnist --rows 10 --seed 1", "--shape criteo --rows 0 --seed 1",
                           "--shape criteo --rows 10 --seed 1 --task poisson",
                           "--shape criteo --rows 10 --seed 1 --threads -1",
                           "--shape criteo --seed 1", "--shape criteo --rows ten --seed 1"}) {
    auto r = run_agld("gen " + args);
    EXPECT_EQ(r.exit_code, 64) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
  auto r = run_agld("gen --shape mnist --rows 10 --seed 1");
  EXPECT_NE(r.err.find("mnist"), std::string::npos) << r.err;
}

TEST(GenTest, FailedRunLeavesNothingBehind) {
  TempDir dir;
  // The weights cannot be created: nothing is written, not even the data file.
  std::string out = dir.file("c.svm");
  auto r = run_agld("gen --shape criteo --rows 100 --seed 1 -o '" + out + "' --weights '" +
                    dir.file("missing/w.csv") + "'");
  EXPECT_EQ(r.exit_code, 74) << r.err;
  EXPECT_TRUE(test::list_dir(dir.path()).empty());
  auto s = run_agld("gen --shape criteo --rows 100 --seed 1 -o '" + dir.file("no/c.svm") + "'");
  EXPECT_EQ(s.exit_code, 74) << s.err;
  EXPECT_TRUE(test::list_dir(dir.path()).empty());
}

TEST(GenTest, LibraryReportMatchesTheFile) {
  TempDir dir;
  GenOptions opt;
  opt.shape = "criteo";
  opt.rows = 3000;
  opt.seed = 77;
  opt.output = dir.file("c.svm.zst");
  opt.threads = 2;
  uint64_t progress_rows = 0;
  opt.progress = [&](const GenProgress& p) {
    EXPECT_GT(p.rows, progress_rows);
    EXPECT_EQ(p.rows_total, 3000u);
    progress_rows = p.rows;
  };
  GenReport report;
  ASSERT_TRUE(generate(opt, &report).is_ok());
  EXPECT_EQ(progress_rows, 3000u);
  EXPECT_EQ(report.rows, 3000u);
  EXPECT_EQ(report.features, kCriteoD);
  EXPECT_EQ(report.output_bytes, read_file(opt.output).size());
  EXPECT_EQ(report.weights, opt.output + ".weights.csv");
  auto d = run_shell("zstd -dc '" + opt.output + "'");
  ASSERT_EQ(d.exit_code, 0);
  EXPECT_EQ(report.text_bytes, d.out.size());
  std::vector<Row> rows;
  ASSERT_EQ(parse_libsvm(d.out, kCriteoD, &rows), "");
  uint64_t positives = 0, nnz = 0;
  std::set<uint64_t> occurring;
  for (const Row& r : rows) {
    positives += r.label == 1 ? 1 : 0;
    nnz += r.indices.size();
    occurring.insert(r.indices.begin(), r.indices.end());
  }
  EXPECT_EQ(report.positives, positives);
  EXPECT_EQ(report.nnz, nnz);
  EXPECT_EQ(report.features_used, occurring.size());
  Weights w;
  ASSERT_EQ(parse_weights(read_file(report.weights), kCriteoD, &w), "");
  EXPECT_EQ(w.intercept, report.intercept);
  EXPECT_GT(report.tau, 0);

  opt.rows = 0;
  EXPECT_EQ(generate(opt, &report).code(), Status::Code::kInvalidArgument);
}

// gen writes through the FileSystem it is given: a disk that fills at any point of the data
// or of the weights file is one error, "No space left on device", naming the file, and
// neither file is left.
TEST(GenTest, DiskFullLeavesNothing) {
  TempDir dir;
  GenOptions opt;
  opt.shape = "criteo";
  opt.rows = 2000;
  opt.seed = 5;
  opt.threads = 2;
  opt.output = dir.file("c.svm");
  GenReport report;
  test::FaultFileSystem probe;
  ASSERT_TRUE(generate(opt, &report, probe).is_ok());
  const uint64_t data = report.output_bytes, total = probe.bytes_written();
  ASSERT_GT(total, data);  // the weights come after the data
  std::filesystem::remove(opt.output);
  std::filesystem::remove(report.weights);
  for (uint64_t space : {uint64_t{0}, data / 2, data, data + 1, total - 1}) {
    SCOPED_TRACE("the disk full after " + std::to_string(space) + " of " + std::to_string(total) + " bytes");
    test::FaultFileSystem ffs;
    ffs.space = space;
    Status st = generate(opt, &report, ffs);
    EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
    const std::string file = space < data ? opt.output : opt.output + ".weights.csv";
    EXPECT_EQ(st.message(), file + ": write failed: No space left on device");
    EXPECT_TRUE(test::list_dir(dir.path()).empty());
  }
}

}  // namespace gen_test
}  // namespace
}  // namespace agld
