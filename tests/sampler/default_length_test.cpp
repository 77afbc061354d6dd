// The default run length (docs/samplers.md, "Defaults"): about 20 passes of the data a chain,
// the strategy's start and its refreshes counted, for every method of the registries and the
// paper's names (lmc included: it once ran 10,000 full passes by default). Counted from what a
// run really read (the last evaluation's passes), not from the rule that planned it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <ostream>
#include <random>

#include "sampler_test_support.hpp"

namespace agld {
// ctest lists a case by its method's name.
inline void PrintTo(const MethodInfo& m, std::ostream* os) { *os << m.name; }
}  // namespace agld

namespace agld::test {
namespace {
namespace default_length_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// 5 x 10^5 rows: the size at which lmc's small-store floor (iterations that read 10^7 rows) is
// 20 passes too, so that neither rule hides the other. Two features a row, logistic.
constexpr uint64_t kRows = 500000;
constexpr uint32_t kDim = 8;

class DefaultLength : public ::testing::TestWithParam<MethodInfo> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    std::mt19937_64 rng(test_seed(31));
    std::uniform_int_distribution<uint32_t> feature(0, kDim - 1);
    std::normal_distribution<double> n01;
    SparseRows rows;
    for (uint64_t r = 0; r < kRows; ++r) {
      uint32_t a = feature(rng), b = feature(rng);
      if (a == b) b = (a + 1) % kDim;
      if (a > b) std::swap(a, b);
      const float va = static_cast<float>(n01(rng)), vb = static_cast<float>(n01(rng));
      const std::vector<uint32_t> idx = {a, b};
      const std::vector<float> val = {va, vb};
      rows.add_row(va + vb + n01(rng) > 0 ? 1.0 : -1.0, idx, val);
    }
    store_ = make_store(dir_->file("s.agld"), rows, kDim, true, 4096).release();
  }
  static void TearDownTestSuite() {
    delete store_;
    delete dir_;
  }
  static TempDir* dir_;
  static Store* store_;
};
TempDir* DefaultLength::dir_ = nullptr;
Store* DefaultLength::store_ = nullptr;

// The default length of `method`, counted from what the run read.
// Not inlined: g++ 12 then warns that the optional method may be used uninitialized (a false
// positive of -Wmaybe-uninitialized on std::optional<std::string>).
[[gnu::noinline]] SampleOptions length_options(const std::string& method, const std::string& precondition) {
  SampleOptions o;
  o.method = method;
  o.precondition = precondition;
  o.chains = 1;  // passes count every chain's reads: one chain's are the rule's
  o.evaluations = 1;
  o.memory = uint64_t{1} << 30;
  o.seed = test_seed(5);
  o.until_mixed = "off";  // the first stage's length is the rule's; later stages double it
  return o;
}

void expect_twenty_passes(const Store& store, const std::string& method, const std::string& precondition) {
  const SampleOptions o = length_options(method, precondition);
  KeepDraws keep;
  SampleResult r;
  Status st = sample(store, nullptr, o, keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_TRUE(r.last_eval.has_value());
  const double passes = r.last_eval->passes;
  std::cout << method << " (precondition " << precondition << "): " << r.run.iterations << " iterations of " << r.run.batch << " rows, "
            << passes << " passes read (" << r.run.length_rule << ")\n";
  EXPECT_LE(passes, 20.0 + 1e-9) << method;
  EXPECT_GE(passes, 18.0) << method;  // and not much less: the rule spends its budget
  // At least 100 kept states a chain for the diagnostics, where the run has them.
  EXPECT_GE(r.draws, std::min<uint64_t>(100, r.run.iterations - r.run.burn_in)) << method;
}

TEST_P(DefaultLength, IsAboutTwentyPassesAChain) { expect_twenty_passes(*store_, GetParam().name, "none"); }

// With the diagonal preconditioner its sample, and its statistics' pass (this store records
// none), count too: the rows it reads add to the start's whatever the access order and the
// dynamics, so one method a snapshot strategy (each counts its start and refreshes its way).
class DefaultLengthWithDiag : public DefaultLength {};
TEST_P(DefaultLengthWithDiag, IsAboutTwentyPassesAChain) { expect_twenty_passes(*store_, GetParam().name, "diag"); }

// Every snapshot x access order with ld, and every alias (the papers' underdamped methods
// among them): the rule counts rows read, which the dynamics does not change.
std::vector<MethodInfo> length_methods() {
  std::vector<MethodInfo> out;
  for (const MethodInfo& m : sample_methods()) {
    if (m.dynamics == "ld" || !m.means.empty()) out.push_back(m);
  }
  return out;
}

// The first ld method of each snapshot strategy.
std::vector<MethodInfo> one_method_a_snapshot() {
  std::vector<MethodInfo> out;
  for (const MethodInfo& m : sample_methods()) {
    if (m.dynamics != "ld" || !m.means.empty()) continue;
    if (std::none_of(out.begin(), out.end(), [&](const MethodInfo& o) { return o.snapshot == m.snapshot; })) out.push_back(m);
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<MethodInfo>& p) {
  std::string s;
  for (char c : p.param.name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : (c == '+' ? 'P' : '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, DefaultLength, ::testing::ValuesIn(length_methods()), case_name);
INSTANTIATE_TEST_SUITE_P(EverySnapshot, DefaultLengthWithDiag, ::testing::ValuesIn(one_method_a_snapshot()), case_name);

}  // namespace default_length_test
}  // namespace
}  // namespace agld::test
