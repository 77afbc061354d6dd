// Shared by the sampler tests: a store from rows, an observer that keeps the draws, and
// posterior summaries with their Monte Carlo error (batch means). The bodies are in
// sampler_test_support.cpp, compiled once: Eigen's solvers in every test file cost minutes of build.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld::test {

// The metadata the sampler reads, for rows written as a store.
StoreMeta sampler_meta(const SparseRows& rows, uint64_t features, bool binary);

// Writes rows as a store (16-row chunks, zstd) with the metadata the sampler reads; with
// `stats`, the per-feature statistics too, as `agld convert` writes them; `fields`: the
// complete one-hot fields the metadata lists.
std::unique_ptr<Store> make_store(const std::string& path, const SparseRows& rows, uint64_t features,
                                  bool binary, size_t chunk_rows = 16, bool stats = false,
                                  const std::vector<FeatureField>& fields = {});

// n logistic rows of d dense N(0, 1) features, labels +-1 from x . (weight, ..., weight) + N(0, 1).
SparseRows dense_binary_rows(uint64_t seed, size_t n, uint32_t d, double weight);

// A linear model y = x . beta + N(0, noise_var) on rows whose features are each present with
// probability `presence` (values N(0, 1)), and its exact Gaussian posterior under the prior
// N(0, I): precision X'X / noise_var + I.
struct ExactLinear {
  SparseRows rows;
  Eigen::VectorXd mean, sd;
  double trace = 0;       // of the posterior covariance
  double lambda_max = 0;  // the posterior precision's largest eigenvalue
};
ExactLinear exact_linear(uint64_t seed, size_t n, const std::vector<double>& beta, double noise_var,
                         double presence);

// Stan's posterior of heart_scale (datasets/heart_scale.ref.csv; datasets/README.md): the
// mean and sd of each of the 13 coordinates.
struct StanReference {
  std::vector<double> mean, sd;
};
StanReference read_heart_scale_reference();
// The same from any such file of datasets/ ("coord","mean","sd", ... a line a coordinate).
StanReference read_reference(const std::string& name);
// The LIBSVM file svm converted (every default) to a store at path, opened (null on failure,
// with a test failure saying why).
std::unique_ptr<Store> convert_to_store(const std::string& svm, const std::string& path);
// datasets/dummy_logistic.svm (3,000 dummy-coded rows, 200 features, 165 of them in at most 64
// rows) converted to a store at path; its exact posterior with an intercept is
// read_reference("dummy_logistic.ref.csv").
std::unique_ptr<Store> dummy_logistic_store(const std::string& path);
// The options that posterior is for (logistic, an intercept, the prior N(0, I)), seeded, with
// no evaluations, 1 GiB and one stage of the default length.
SampleOptions dummy_logistic_options(uint64_t seed);

// A method of the registries' cross product: snapshot strategy x access order x dynamics.
struct MethodParts {
  std::string snapshot, access, dynamics;
  std::string method() const;  // SNAPSHOT-ACCESS[-DYNAMICS], ld's without the suffix
  std::string test_name() const;  // snapshot_access_dynamics, "ptu+" as "ptuplus"
};
void PrintTo(const MethodParts& m, std::ostream* os);
// The cross product split in two, for suites too costly to run whole by default (the default
// suite runs `method_pairs`, a *Long suite the rest). method_pairs: every snapshot x access
// order with the first dynamics, and every other dynamics with every snapshot, the access
// order turning with the snapshot: every pair of values (snapshot and access, snapshot and
// dynamics, access and dynamics) is in some case, and a new strategy, order or dynamics cannot
// go untested. method_rest: the cross product's other cases.
std::vector<MethodParts> method_pairs();
std::vector<MethodParts> method_rest();
// Every value of each registry in some case (case i: the i-th snapshot, order and dynamics,
// each registry taken again from its start when shorter): as many cases as the longest
// registry. For the sanitizer builds (kSanitizedBuild), which look for memory errors and races
// in each component's code, not in each pair's interplay.
std::vector<MethodParts> method_each();

// Keeps every draw's tracked coordinates.
class KeepDraws final : public SampleObserver {
 public:
  Status on_draw(const DrawRecord& d) override {
    draws.push_back(d.tracked);
    lps.push_back(d.lp);
    return Status::ok();
  }
  Status on_eval(const EvalRecord& e) override {
    evals.push_back(e);
    return Status::ok();
  }
  std::vector<std::vector<double>> draws;
  std::vector<double> lps;
  std::vector<EvalRecord> evals;
};

struct Summary {
  double mean = 0, sd = 0, mcse = 0;  // mcse: Monte Carlo standard error of the mean
};

// Mean, sd and the batch-means Monte Carlo error of coordinate t of the draws.
Summary summarize(const std::vector<std::vector<double>>& draws, size_t t, size_t batches = 40);

}  // namespace agld::test
