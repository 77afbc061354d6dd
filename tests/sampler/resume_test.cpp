// Resuming from a checkpoint (docs/reliability.md): a run stopped right after a checkpoint
// (as a kill would) and resumed from it gives exactly what the run that never stopped gives:
// every chain's draws, every evaluation but its wall times and I/O gauges, the posterior and
// the diagnostics, bit for bit; for every snapshot strategy x access order, at 1 and 2
// threads. And resume refuses what is not the run's: damaged bytes, other options, another
// store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "agld/checkpoint.hpp"
#include "agld/reader.hpp"
#include "agld/version.hpp"
#include "output/checkpoint_io.hpp"
#include "store/crc32c.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/snapshot.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace resume_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 30;

class MemFile final : public WritableFile, public ReadableFile {
 public:
  const std::string& path() const override { return path_; }
  Status append(ByteSpan data) override {
    bytes.insert(bytes.end(), data.begin(), data.end());
    return Status::ok();
  }
  uint64_t size() const override { return bytes.size(); }
  Status commit() override { return Status::ok(); }
  Status view(uint64_t offset, size_t n, ByteSpan* out) const override {
    if (offset > bytes.size() || n > bytes.size() - offset) return Status::corruption("past the end");
    *out = ByteSpan(bytes.data() + offset, n);
    return Status::ok();
  }
  std::vector<std::byte> bytes;

 private:
  std::string path_ = "checkpoint";
};

// Keeps what a run directory would: the draws by chain, the evaluations; saves every
// checkpoint offered (every `every`-th point), and stops the run after the `stop_after`-th
// (0: never), keeping that checkpoint, as kill -9 right after it would.
class Recorder final : public SampleObserver {
 public:
  Status on_draw(const DrawRecord& d) override {
    std::vector<double> row = {static_cast<double>(d.iteration), d.lp};
    row.insert(row.end(), d.tracked.begin(), d.tracked.end());
    draws[d.chain].push_back(row);
    return Status::ok();
  }
  // A longer stage (a run until mixed): the draws start again, as the draws files do.
  Status on_stage(const ResolvedSample&) override {
    draws.clear();
    return Status::ok();
  }
  Status on_eval(const EvalRecord& e) override {
    EvalRecord x = e;
    x.seconds = x.eval_seconds = 0;  // wall times
    x.bytes_read = x.memory_bytes = 0;  // I/O gauges: a resumed run re-reads what its cache held
    evals.push_back(x);
    return Status::ok();
  }
  bool checkpoint_due(uint64_t, bool burn_in_ended) override {
    burn_in_seen |= burn_in_ended;
    return ++offers % every == 0;
  }
  Status on_checkpoint(uint64_t iteration, const std::function<Status(WritableFile&)>& save) override {
    MemFile f;
    Status st = save(f);
    if (!st.is_ok()) return st;
    last = std::move(f);
    last_iteration = iteration;
    if (++written == stop_after) return Status::internal("stopped after a checkpoint (test)");
    return Status::ok();
  }
  std::map<uint64_t, std::vector<std::vector<double>>> draws;
  std::vector<EvalRecord> evals;
  uint64_t every = 1, stop_after = 0, offers = 0, written = 0, last_iteration = 0;
  bool burn_in_seen = false;
  MemFile last;
};

bool same_eval(const EvalRecord& a, const EvalRecord& b) {
  auto same = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  return a.iteration == b.iteration && same(a.passes, b.passes) && a.grad_evals == b.grad_evals &&
         a.burn_in == b.burn_in && a.samples == b.samples && same(a.test_loglik, b.test_loglik) &&
         a.chain_test_loglik == b.chain_test_loglik && same(a.test_accuracy, b.test_accuracy) &&
         same(a.test_mse, b.test_mse);
}

bool same_evals(const std::vector<EvalRecord>& a, const std::vector<EvalRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_eval(a[i], b[i])) return false;
  }
  return true;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Features 0-4 are a complete one-hot field (kField): every row holds one, with value 1; the
// others are random. With the intercept, the run makes the exact move along the field's
// direction at each refresh point (sampler/unseen_move.hpp), which a resume must repeat too.
const std::vector<FeatureField> kField = {{0, 5}};

SparseRows rows_of(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(5, kDim - 1), level(0, 4);
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint32_t> idx{level(rng)};
    std::vector<float> val{1.0f};
    for (int e = 0; e < 4; ++e) {
      const uint32_t j = feature(rng);
      if (std::find(idx.begin(), idx.end(), j) != idx.end()) continue;
      idx.push_back(j);
      val.push_back(static_cast<float>(n01(rng)));
    }
    std::sort(idx.begin(), idx.end());
    rows.add_row(n01(rng) + 0.3 * static_cast<double>(idx.size()) > 1 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

SampleOptions options(const std::string& method, unsigned threads) {
  SampleOptions o;
  o.method = method;
  o.seed = 29;
  o.chains = 3;
  o.threads = threads;
  o.batch = 60;
  o.iterations = 200;
  o.burn_in = 50;
  o.thin = 3;
  o.evaluations = 7;
  o.intercept = true;
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  o.track = {0, 7, 29, 30};
  return o;
}

void expect_resumed_run_is_whole(const MethodParts& c) {
  TempDir dir;
  // 500 rows in chunks of 64: passes end inside chunks and inside batches.
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(41), 500), kDim, true, 64, false, kField);
  auto test_store = make_store(dir.file("t.agld"), rows_of(test_seed(42), 70), kDim, true, 16);
  const std::string method = c.method();
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(method + ", " + std::to_string(threads) + " thread(s)");
    Recorder whole;
    SampleResult want;
    Status st = sample(*store, test_store.get(), options(method, threads), whole, &want);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(want.run.unseen_directions, 1u);  // the field beside the intercept
    // Stopped after its 2nd, then its 5th, checkpoint (offered at every 3rd point where the
    // chains are current), each time resumed from the first stop.
    for (uint64_t stop : {2u, 5u}) {
      Recorder first;
      first.every = 3;
      first.stop_after = stop;
      SampleResult unused;
      st = sample(*store, test_store.get(), options(method, threads), first, &unused);
      ASSERT_EQ(st.code(), Status::Code::kInternal) << st.message();
      ASSERT_EQ(first.written, stop);
      CheckpointInfo info;
      st = read_checkpoint_info(first.last, &info);
      ASSERT_TRUE(st.is_ok()) << st.message();
      EXPECT_EQ(info.iteration, first.last_iteration);
      EXPECT_EQ(info.options.method, method);
      Recorder second;
      SampleResult got;
      st = resume_sample(*store, test_store.get(), info.options, first.last, second, &got);
      ASSERT_TRUE(st.is_ok()) << st.message();
      EXPECT_EQ(second.draws, whole.draws) << "stopped at " << first.last_iteration;
      EXPECT_TRUE(same_evals(second.evals, whole.evals)) << "stopped at " << first.last_iteration;
      EXPECT_EQ(got.draws, want.draws);
      EXPECT_TRUE(same_bits(got.mean, want.mean));
      EXPECT_TRUE(same_bits(got.sd, want.sd));
      EXPECT_TRUE(same_bits(got.rhat, want.rhat));
      EXPECT_TRUE(same_bits(got.ess, want.ess));
      EXPECT_TRUE(same_bits(got.mcse, want.mcse));
      ASSERT_EQ(got.tracked_draws.size(), want.tracked_draws.size());
      for (size_t t = 0; t < got.tracked_draws.size(); ++t) EXPECT_TRUE(same_bits(got.tracked_draws[t], want.tracked_draws[t]));
      EXPECT_EQ(got.run.diagnosed_rule, want.run.diagnosed_rule);
      EXPECT_EQ(got.run.state_bytes, want.run.state_bytes);
    }
  }
}

// With Rao-Blackwellized moments (a linear model on a store with its per-feature statistics:
// Gaussian conditionals; a logistic one on 300 rows, where every feature is in at most 64:
// conditionals by quadrature), the conditional draws before the checkpoint are in it: stopped
// after burn-in, between refreshes, and resumed, the same posterior.npy bit for bit.
TEST(Resume, KeepsTheConditionalMoments) {
  for (const std::string model : {"linear", "logistic"}) {
    SCOPED_TRACE(model);
    TempDir dir;
    const bool linear = model == "linear";
    SparseRows rows = rows_of(test_seed(48), linear ? 500 : 300);
    std::mt19937_64 rng(test_seed(49));
    std::normal_distribution<double> n01;
    for (size_t r = 0; r < rows.rows() && linear; ++r) {  // real labels: x . (0.1 j) + N(0, 1)
      double y = n01(rng);
      const auto idx = rows.row_indices(r);
      const auto val = rows.row_values(r);
      for (size_t e = 0; e < idx.size(); ++e) y += 0.1 * idx[e] * val[e];
      rows.labels[r] = y;
    }
    auto store = make_store(dir.file("s.agld"), rows, kDim, !linear, 64, true);
    SampleOptions o = options("ptu-ca", 2);
    o.model = model;
    o.iterations = 400;  // a refresh every 9 (linear) or 5 iterations: 39 or 72 after burn-in
    Recorder whole;
    SampleResult want;
    ASSERT_TRUE(sample(*store, nullptr, o, whole, &want).is_ok());
    ASSERT_TRUE(want.run.rao_blackwell) << want.run.rao_blackwell_rule;
    ASSERT_EQ(want.run.rao_blackwell_rare_rows > 0, !linear);
    ASSERT_GT(want.rb_means, 0u);
    Recorder first;
    first.every = 5;
    first.stop_after = 12;
    SampleResult unused;
    ASSERT_EQ(sample(*store, nullptr, o, first, &unused).code(), Status::Code::kInternal);
    ASSERT_GT(first.last_iteration, o.burn_in.value()) << "the checkpoint should hold conditional draws";
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint_info(first.last, &info).is_ok());
    Recorder second;
    SampleResult got;
    Status st = resume_sample(*store, nullptr, info.options, first.last, second, &got);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(got.rb_samples, want.rb_samples);
    EXPECT_EQ(got.rb_means, want.rb_means);
    EXPECT_EQ(got.rb_sds, want.rb_sds);
    EXPECT_TRUE(same_bits(got.mean, want.mean));
    EXPECT_TRUE(same_bits(got.sd, want.sd));
    EXPECT_TRUE(same_bits(got.mcse, want.mcse));
  }
}

// With a dense block (--metric block: the intercept and the 17 most frequent features here),
// whose positions and momenta live in the lazy state's records: the same draws bit for bit,
// each dynamics.
TEST(Resume, KeepsTheDenseBlock) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(43), 500), kDim, true, 64, false, kField);
  for (const auto& d : sampler::registered_dynamics()) {
    std::string method = "ptu-ca";
    if (d.name != "ld") {  // two appends: g++ 12 -O3 warns falsely (-Wrestrict) on "-" + name
      method += '-';
      method += d.name;
    }
    SampleOptions o = options(method, 2);
    o.metric = "block";
    SCOPED_TRACE(method);
    Recorder whole;
    SampleResult want;
    ASSERT_TRUE(sample(*store, nullptr, o, whole, &want).is_ok());
    ASSERT_EQ(want.run.metric, "block") << want.run.metric_rule;
    Recorder first;
    first.every = 3;
    first.stop_after = 3;
    SampleResult unused;
    ASSERT_EQ(sample(*store, nullptr, o, first, &unused).code(), Status::Code::kInternal);
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint_info(first.last, &info).is_ok());
    Recorder second;
    SampleResult got;
    const Status st = resume_sample(*store, nullptr, info.options, first.last, second, &got);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_EQ(second.draws, whole.draws) << "stopped at " << first.last_iteration;
    EXPECT_TRUE(same_bits(got.mean, want.mean));
    EXPECT_TRUE(same_bits(got.sd, want.sd));
  }
}

// A run until mixed stopped in its third stage: the stage, its verdicts and the cap are in the
// checkpoint; the resumed run keeps the same draws, evaluations and posterior bit for bit.
TEST(Resume, KeepsTheStage) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(44), 500), kDim, true, 64, false, kField);
  SampleOptions o = options("ptu-ca", 2);
  o.until_mixed = "on";
  o.target_ess = 1e12;  // never met: the run goes on to its cap
  o.max_passes = 300;   // stages of about 46, 92 and 184 passes
  o.time_limit = 1e6;   // resumable, and a stage's verdict reads it
  Recorder whole;
  SampleResult want;
  ASSERT_TRUE(sample(*store, nullptr, o, whole, &want).is_ok());
  ASSERT_GE(want.run.stage, 2u) << want.stop_reason;
  Recorder first;
  first.stop_after = 1000000;
  SampleResult unused;
  // Stop at the first checkpoint offered in the last stage.
  first.every = 1;
  {
    Recorder count;
    SampleResult r;
    ASSERT_TRUE(sample(*store, nullptr, o, count, &r).is_ok());
    first.stop_after = count.written;  // the last checkpoint: in the last stage
  }
  ASSERT_EQ(sample(*store, nullptr, o, first, &unused).code(), Status::Code::kInternal);
  ASSERT_GT(first.last_iteration, want.run.burn_in) << "the checkpoint should be in the last stage";
  CheckpointInfo info;
  ASSERT_TRUE(read_checkpoint_info(first.last, &info).is_ok());
  Recorder second;
  SampleResult got;
  const Status st = resume_sample(*store, nullptr, info.options, first.last, second, &got);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(got.run.stage, want.run.stage);
  EXPECT_EQ(got.stage_verdicts, want.stage_verdicts);
  EXPECT_EQ(got.stop_reason, want.stop_reason);
  EXPECT_EQ(second.draws, whole.draws) << "stopped at " << first.last_iteration;
  EXPECT_TRUE(same_evals(second.evals, whole.evals));
  EXPECT_TRUE(same_bits(got.mean, want.mean));
  EXPECT_TRUE(same_bits(got.sd, want.sd));
  EXPECT_TRUE(same_bits(got.rhat, want.rhat));
}

// Every pair of a dynamics, a snapshot and an access order (method_pairs; the momenta are in
// the checkpoint too); ResumeLong: the rest of their cross product. Under a sanitizer, each
// snapshot, order and dynamics once (method_each): each one's checkpoint code.
class Resume : public ::testing::TestWithParam<MethodParts> {};
class ResumeLong : public ::testing::TestWithParam<MethodParts> {};
TEST_P(Resume, IsTheRunThatNeverStopped) { expect_resumed_run_is_whole(GetParam()); }
TEST_P(ResumeLong, IsTheRunThatNeverStopped) { expect_resumed_run_is_whole(GetParam()); }
std::string case_name(const ::testing::TestParamInfo<MethodParts>& p) { return p.param.test_name(); }
INSTANTIATE_TEST_SUITE_P(EverySnapshotAndAccess, Resume,
                         ::testing::ValuesIn(kSanitizedBuild ? method_each() : method_pairs()), case_name);
INSTANTIATE_TEST_SUITE_P(EverySnapshotAndAccess, ResumeLong, ::testing::ValuesIn(method_rest()), case_name);

// The end of burn-in is offered once; random orders resume with each chain's own stream;
// --share-batches too.
TEST(ResumeChecks, SharedBatchesAndBurnIn) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(43), 300), kDim, true, 32);
  SampleOptions o = options("tmu-rr", 2);
  o.share_batches = true;
  Recorder whole;
  SampleResult want;
  ASSERT_TRUE(sample(*store, nullptr, o, whole, &want).is_ok());
  EXPECT_TRUE(whole.burn_in_seen);
  Recorder first;
  first.stop_after = 4;
  SampleResult unused;
  ASSERT_EQ(sample(*store, nullptr, o, first, &unused).code(), Status::Code::kInternal);
  Recorder second;
  SampleResult got;
  Status st = resume_sample(*store, nullptr, o, first.last, second, &got);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(second.draws, whole.draws);
  EXPECT_TRUE(same_bits(got.mean, want.mean));
}

TEST(ResumeChecks, RefusesWhatIsNotTheRun) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(44), 300), kDim, true, 32);
  auto other = make_store(dir.file("o.agld"), rows_of(test_seed(45), 300), kDim, true, 32);
  const SampleOptions o = options("ptu-ca", 1);
  Recorder first;
  first.stop_after = 2;
  SampleResult r;
  ASSERT_EQ(sample(*store, nullptr, o, first, &r).code(), Status::Code::kInternal);
  Recorder sink;
  // Other options: named.
  SampleOptions changed = o;
  changed.seed = 30;
  Status st = resume_sample(*store, nullptr, changed, first.last, sink, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("option seed was 29, now 30"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().rfind(first.last.path() + ": ", 0), 0u) << st.message();  // names the checkpoint
  // Threads and the time limit may change.
  changed = o;
  changed.threads = 2;
  changed.time_limit = 1000;
  st = resume_sample(*store, nullptr, changed, first.last, sink, &r);
  EXPECT_TRUE(st.is_ok()) << st.message();
  // Another store of the same shape.
  st = resume_sample(*other, nullptr, o, first.last, sink, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("is not the training store the run started with"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().rfind(first.last.path() + ": ", 0), 0u) << st.message();
  // A test store the run did not have.
  st = resume_sample(*store, other.get(), o, first.last, sink, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.message();
  // Damaged bytes: every 97th byte flipped in turn, and cut short: one error, no crash.
  for (size_t i = 0; i < first.last.bytes.size(); i += 97) {
    MemFile bad = first.last;
    bad.bytes[i] ^= std::byte{1};
    st = resume_sample(*store, nullptr, o, bad, sink, &r);
    EXPECT_FALSE(st.is_ok()) << "byte " << i;
  }
  MemFile cut = first.last;
  cut.bytes.resize(cut.bytes.size() / 2);
  st = resume_sample(*store, nullptr, o, cut, sink, &r);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.message();
}


// The trailer (the payload's length, its CRC-32C) made to match the bytes.
void fix_trailer(MemFile& f) {
  using checkpoint::kHeaderSize;
  using checkpoint::kTrailerSize;
  std::byte* t = f.bytes.data() + f.bytes.size() - kTrailerSize;
  const uint64_t payload = f.bytes.size() - kHeaderSize - kTrailerSize;
  const uint32_t crc = crc32c::value(f.bytes.data(), f.bytes.size() - kTrailerSize);
  std::memcpy(t, &payload, 8);
  std::memcpy(t + 8, &crc, 4);
}

// The checkpoint with its RUN section's agld version replaced by `version`, and its trailer
// (length, CRC-32C) made to match: what another build of agld would have written.
MemFile with_version(const MemFile& f, const std::string& version) {
  using checkpoint::kHeaderSize;
  using checkpoint::kTrailerSize;
  const size_t at = kHeaderSize + 4;  // the RUN tag, then the version: its length, its bytes
  uint64_t n = 0;
  std::memcpy(&n, f.bytes.data() + at, 8);
  MemFile out;
  out.bytes.assign(f.bytes.begin(), f.bytes.begin() + static_cast<std::ptrdiff_t>(at));
  const uint64_t m = version.size();
  const auto* p = reinterpret_cast<const std::byte*>(&m);
  out.bytes.insert(out.bytes.end(), p, p + 8);
  const auto* v = reinterpret_cast<const std::byte*>(version.data());
  out.bytes.insert(out.bytes.end(), v, v + version.size());
  out.bytes.insert(out.bytes.end(), f.bytes.begin() + static_cast<std::ptrdiff_t>(at + 8 + n), f.bytes.end());
  fix_trailer(out);
  return out;
}

// The checkpoint with `n` bytes at `at` replaced and its trailer (length, CRC-32C) made to
// match: a damage the checksum cannot see.
MemFile rewritten(const MemFile& f, size_t at, const void* bytes, size_t n) {
  MemFile out = f;
  std::memcpy(out.bytes.data() + at, bytes, n);
  fix_trailer(out);
  return out;
}

// A checkpoint whose iteration was moved (within the run, the checksum made to match) does
// not hold that iteration's draws and evaluations: corrupt, not a resumed run with the
// wrong number of draws (found by fuzz/checkpoint_fuzz.cpp in CI).
TEST(ResumeChecks, RefusesAnIterationThatIsNotTheDraws) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(47), 300), kDim, true, 32);
  const SampleOptions o = options("tmu-rr", 1);
  Recorder first;
  first.stop_after = 3;
  SampleResult r;
  ASSERT_EQ(sample(*store, nullptr, o, first, &r).code(), Status::Code::kInternal);
  const uint32_t engn = checkpoint::tag("ENGN");
  const auto* tag = reinterpret_cast<const std::byte*>(&engn);
  const auto it = std::search(first.last.bytes.begin(), first.last.bytes.end(), tag, tag + 4);
  ASSERT_NE(it, first.last.bytes.end());
  const size_t at = static_cast<size_t>(it - first.last.bytes.begin()) + 4;
  uint64_t k = 0;
  std::memcpy(&k, first.last.bytes.data() + at, 8);
  ASSERT_EQ(k, first.last_iteration);
  Recorder sink;
  ASSERT_LT(k, 100u);
  // Each move crosses at least one evaluation (every 28 iterations) and 199 many draws.
  for (uint64_t moved : {k + 30, k + 60, uint64_t{199}}) {
    Status st = resume_sample(*store, nullptr, o, rewritten(first.last, at, &moved, 8), sink, &r);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << "iteration " << moved << " for " << k << ": " << st.message();
  }
  EXPECT_TRUE(resume_sample(*store, nullptr, o, rewritten(first.last, at, &k, 8), sink, &r).is_ok());
}

// A checkpoint of another build (another git commit: kVersion is "VERSION+COMMIT") is
// refused, naming both builds; the same bytes with this build's identity resume.
TEST(ResumeChecks, RefusesAnotherBuild) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(46), 300), kDim, true, 32);
  const SampleOptions o = options("ptu-ca", 1);
  Recorder first;
  first.stop_after = 2;
  SampleResult r;
  ASSERT_EQ(sample(*store, nullptr, o, first, &r).code(), Status::Code::kInternal);
  EXPECT_NE(std::string(kVersion).find(std::string("+") + kGitCommit), std::string::npos) << kVersion;
  Recorder sink;
  const std::string other = std::string(kProjectVersion) + "+0123456789ab";
  Status st = resume_sample(*store, nullptr, o, with_version(first.last, other), sink, &r);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported) << st.message();
  EXPECT_NE(st.message().find("written by agld " + other), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(std::string("this is agld ") + kVersion), std::string::npos) << st.message();
  st = resume_sample(*store, nullptr, o, with_version(first.last, kVersion), sink, &r);
  EXPECT_TRUE(st.is_ok()) << st.message();
}

}  // namespace resume_test
}  // namespace
}  // namespace agld::test
