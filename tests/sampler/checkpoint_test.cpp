// Checkpoints (docs/reliability.md): the format's checks, every component's state round-trip
// (every registered snapshot strategy, a chain, the pooled moments, the online diagnostics,
// the predictive), and resuming: a run stopped after a checkpoint and resumed gives exactly
// the draws, metrics and posterior of the run that never stopped, for every snapshot x
// access order, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "agld/checkpoint.hpp"
#include "diagnostics/online_diagnostics.hpp"
#include "model/model.hpp"
#include "output/checkpoint_io.hpp"
#include "sampler/chain.hpp"
#include "sampler/moments.hpp"
#include "sampler/predictive.hpp"
#include "sampler/snapshot.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace checkpoint_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using checkpoint::CheckpointIn;
using checkpoint::CheckpointOut;

// A file in memory: written through WritableFile, read through ReadableFile.
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
  std::string path_ = "mem";
};

// Saves with f into a file in memory and opens it for reading.
template <typename F>
MemFile saved(F&& f) {
  MemFile file;
  CheckpointOut out(file);
  f(out);
  EXPECT_TRUE(out.finish().is_ok());
  return file;
}

CheckpointIn open_in(const MemFile& file) {
  CheckpointIn in;
  Status st = CheckpointIn::open(file, &in);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return in;
}

// The archive (common/state_archive.hpp) through the checkpoint's bytes: sections, scalars,
// a text, contiguous and strided arrays of each element type, and arrays of any length.
TEST(CheckpointFormat, RoundTripsAndRefusesDamage) {
  const std::vector<double> a = {1.5, -2, 1e300};
  const std::vector<double> records = {1, 10, 2, 20, 3, 30};  // two numbers a record: 10, 20, 30 strided
  const std::vector<float> f = {0.5f, -7};
  const std::vector<uint32_t> u = {1, 2, 3};
  const std::vector<uint64_t> w = {uint64_t{1} << 40};
  MemFile file = saved([&](CheckpointOut& out) {
    StateWriter& archive = out;
    archive.section("TEST");
    archive.u64("n", 42);
    archive.f64("x", -0.25);
    archive.text("s", "text");
    archive.flag("flag", true);
    archive.array("a", a);
    archive.array("strided", StridedSpan<const double>(records.data() + 1, 3, 2));
    archive.array("f", f);
    archive.array("u", u);
    archive.array("w", w);
  });
  auto read_scalars = [](StateReader& in, uint64_t* n, double* x, std::string* s, bool* flag) {
    ASSERT_TRUE(in.section("TEST", "test").is_ok());
    ASSERT_TRUE(in.u64("n", n).is_ok());
    ASSERT_TRUE(in.f64("x", x).is_ok());
    ASSERT_TRUE(in.text("s", s, 100).is_ok());
    ASSERT_TRUE(in.flag("flag", flag).is_ok());
  };
  {
    CheckpointIn in = open_in(file);
    uint64_t n = 0;
    double x = 0;
    std::string s;
    bool flag = false;
    std::vector<double> b(3), into_records(6, -1.0);
    std::vector<float> g(2);
    std::vector<uint32_t> v(3);
    std::vector<uint64_t> ww;
    read_scalars(in, &n, &x, &s, &flag);
    ASSERT_TRUE(in.array("a", b).is_ok());
    ASSERT_TRUE(in.array("strided", StridedSpan<double>(into_records.data(), 3, 2)).is_ok());
    ASSERT_TRUE(in.array("f", g).is_ok());
    ASSERT_TRUE(in.array("u", v).is_ok());
    ASSERT_TRUE(in.vec("w", &ww, 10).is_ok());
    EXPECT_TRUE(in.done().is_ok());
    EXPECT_EQ(n, 42u);
    EXPECT_EQ(x, -0.25);
    EXPECT_EQ(s, "text");
    EXPECT_TRUE(flag);
    EXPECT_EQ(b, a);
    EXPECT_EQ(into_records, (std::vector<double>{10, -1, 20, -1, 30, -1}));
    EXPECT_EQ(g, f);
    EXPECT_EQ(v, u);
    EXPECT_EQ(ww, w);
    // An array of another length is corruption naming it, not a read past its end; so is an
    // array longer than its limit, and a text longer than its.
    CheckpointIn again = open_in(file);
    std::vector<double> shorter(2);
    read_scalars(again, &n, &x, &s, &flag);
    const Status st = again.array("the values of a", shorter);
    EXPECT_EQ(st.code(), Status::Code::kCorruption);
    EXPECT_NE(st.message().find("the values of a holds 3 values where the run has 2"), std::string::npos) << st.message();
    CheckpointIn third = open_in(file);
    read_scalars(third, &n, &x, &s, &flag);
    std::vector<double> any;
    EXPECT_EQ(third.vec("a", &any, 2).code(), Status::Code::kCorruption);
    CheckpointIn fourth = open_in(file);
    ASSERT_TRUE(fourth.section("TEST", "test").is_ok());
    ASSERT_TRUE(fourth.u64("n", &n).is_ok());
    ASSERT_TRUE(fourth.f64("x", &x).is_ok());
    EXPECT_EQ(fourth.text("s", &s, 3).code(), Status::Code::kCorruption);
    // Another section than the one expected names what was expected.
    CheckpointIn fifth = open_in(file);
    const Status other = fifth.section("ELSE", "something else");
    EXPECT_NE(other.message().find("expected the section of something else"), std::string::npos) << other.message();
  }
  // Every byte flipped, and every truncation: an error, never a crash.
  for (size_t i = 0; i < file.bytes.size(); ++i) {
    MemFile bad = file;
    bad.bytes[i] ^= std::byte{0x10};
    CheckpointIn in;
    Status st = CheckpointIn::open(bad, &in);
    EXPECT_FALSE(st.is_ok()) << "byte " << i;
    EXPECT_TRUE(st.code() == Status::Code::kCorruption || st.code() == Status::Code::kNotSupported) << st.message();
  }
  for (size_t n = 0; n < file.bytes.size(); ++n) {
    MemFile cut = file;
    cut.bytes.resize(n);
    CheckpointIn in;
    EXPECT_FALSE(CheckpointIn::open(cut, &in).is_ok()) << n << " bytes";
  }
  // Another format version: not supported, saying so.
  MemFile other = file;
  other.bytes[8] = std::byte{99};
  CheckpointIn in;
  Status st = CheckpointIn::open(other, &in);
  EXPECT_EQ(st.code(), Status::Code::kNotSupported);
  EXPECT_NE(st.message().find("format version 99"), std::string::npos) << st.message();
}

// A chain's noise: a saved engine goes on with the same draws; a state cut short, or one
// word damaged into text, is corruption (Boost's reader sets its fail bit at the end of a
// whole state too: Noise::load tells them apart).
TEST(CheckpointNoise, RoundTripsAndRefusesAShortState) {
  sampler::Noise noise(7);
  for (int i = 0; i < 1000; ++i) (void)noise();
  MemFile file = saved([&](CheckpointOut& out) { noise.save(out); });
  sampler::Noise back(1);
  CheckpointIn in = open_in(file);
  ASSERT_TRUE(back.load(in).is_ok());
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(back(), noise()) << "draw " << i;

  std::ostringstream text;
  text << back.engine();
  const std::string whole = text.str();
  std::string lettered = whole;
  lettered[0] = 'x';
  for (const std::string& bad : {whole.substr(0, whole.size() / 2), whole.substr(0, whole.rfind(' ')), lettered,
                                 std::string()}) {
    MemFile damaged = saved([&](CheckpointOut& out) { out.str(bad); });
    CheckpointIn din = open_in(damaged);
    sampler::Noise n(1);
    EXPECT_EQ(n.load(din).code(), Status::Code::kCorruption) << bad.size() << " characters";
  }
}

// Rows of a small logistic problem as a Batch (views of rows).
struct Rows {
  explicit Rows(uint64_t seed, size_t n, uint32_t d) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> n01;
    std::uniform_int_distribution<uint32_t> f(0, d - 1);
    for (size_t r = 0; r < n; ++r) {
      std::vector<uint32_t> idx = {f(rng), f(rng)};
      std::sort(idx.begin(), idx.end());
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      std::vector<float> val;
      for (size_t e = 0; e < idx.size(); ++e) val.push_back(static_cast<float>(n01(rng)));
      rows.add_row(n01(rng) > 0 ? 1.0 : -1.0, idx, val);
      ids.push_back(r);
    }
    append_row_views(rows.offsets, rows.indices.data(), rows.values.data(), &views);
  }
  Batch batch() const { return Batch{ids, rows.labels, views}; }
  Batch slice(size_t from, size_t n) const { return batch().slice(from, n); }
  SparseRows rows;
  std::vector<uint64_t> ids;
  std::vector<BatchRow> views;
};

constexpr uint32_t kD = 12;
constexpr size_t kN = 50;

std::unique_ptr<model::Model> logistic() {
  SampleOptions o;
  return model::find_model("logistic")->make(o);
}

std::vector<std::byte> bytes_of(const sampler::Snapshot& s) {
  return saved([&](CheckpointOut& out) { s.save(out); }).bytes;
}

// Every registered strategy: driven through its start and some steps, saved, loaded into a
// fresh one; the two then give the same shadows and the same updates, and save the same bytes.
TEST(CheckpointRoundTrip, EverySnapshotStrategy) {
  const Rows rows(3, kN, kD);
  auto model = logistic();
  for (const sampler::SnapshotInfo& info : sampler::registered_snapshots()) {
    SCOPED_TRACE(std::string(info.name));
    const sampler::SnapshotParams p{kN, kD, 5, 10, model.get()};
    auto a = info.make(p), b = info.make(p);
    std::vector<double> theta(kD), agg_a(kD), agg_b(kD);
    std::mt19937_64 rng(9);
    std::normal_distribution<double> n01;
    for (double& v : theta) v = n01(rng);
    std::vector<double> margins(kN), s(10);
    auto margins_of = [&](const Batch& batch) {
      for (size_t i = 0; i < batch.size(); ++i) {
        double m = 0;
        for (size_t e = 0; e < batch.row_indices(i).size(); ++e) m += theta[batch.row_indices(i)[e]] * batch.row_values(i)[e];
        margins[i] = m;
      }
      return std::span<const double>(margins.data(), batch.size());
    };
    a->begin_refresh_at(theta, agg_a);
    if (a->refresh_rows() != sampler::RefreshRows::kNone) a->refresh_piece(rows.batch(), margins_of(rows.batch()), agg_a);
    for (size_t step = 0; step < 3; ++step) {
      for (double& v : theta) v = n01(rng);
      const Batch batch = rows.slice(step * 10, 10);
      for (size_t i = 0; i < 10; ++i) s[i] = n01(rng);
      a->after_step(batch, s, agg_a);
    }
    MemFile file = saved([&](CheckpointOut& out) { a->save(out); });
    CheckpointIn in = open_in(file);
    Status st = b->load(in);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(in.done().is_ok());
    EXPECT_EQ(bytes_of(*a), bytes_of(*b));
    agg_b = agg_a;
    std::vector<double> sh_a(10), sh_b(10);
    for (size_t step = 0; step < 5; ++step) {
      const Batch batch = rows.slice(step * 10, 10);
      a->shadows(batch, sh_a);
      b->shadows(batch, sh_b);
      EXPECT_EQ(sh_a, sh_b) << "step " << step;
      for (size_t i = 0; i < 10; ++i) s[i] = n01(rng);
      a->after_step(batch, s, agg_a);
      b->after_step(batch, s, agg_b);
      EXPECT_EQ(agg_a, agg_b) << "step " << step;
    }
    // A strategy of another size is corruption.
    const sampler::SnapshotParams q{kN + 1, kD + 1, 5, 10, model.get()};
    auto c = info.make(q);
    CheckpointIn again = open_in(file);
    st = c->load(again);
    if (a->state_bytes() > 0) {
      EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.message();
    }
    // So is one saved before its start (its point or table still empty): a checkpoint comes
    // after the start's refresh, and a resumed run would read the empty state (the CI's
    // checkpoint fuzz finding, a table of 0 rows).
    MemFile unstarted = saved([&](CheckpointOut& out) { info.make(p)->save(out); });
    CheckpointIn early = open_in(unstarted);
    st = info.make(p)->load(early);
    if (a->state_bytes() > 0) {
      EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.message();
    } else {
      EXPECT_TRUE(st.is_ok()) << st.message();
    }
  }
}

sampler::ChainConfig chain_config(const model::Model& m) {
  sampler::ChainConfig cfg;
  cfg.rows = kN;
  cfg.dim = kD;
  cfg.step = 0.01;
  cfg.prior_var = 1;
  cfg.model = &m;
  cfg.track = {0, 3};
  return cfg;
}

// A chain saved between iterations (lazily behind in some coordinates: the stamps are saved
// too) and loaded into a fresh one steps on exactly as the original, noise included.
TEST(CheckpointRoundTrip, Chain) {
  const Rows rows(4, kN, kD);
  auto model = logistic();
  for (const char* snap : {"tmu", "ptu", "none", "full"}) {
    SCOPED_TRACE(snap);
    const sampler::SnapshotInfo* info = sampler::find_snapshot(snap);
    const sampler::SnapshotParams p{kN, kD, 5, 10, model.get()};
    sampler::Chain a(3, 11, chain_config(*model), info->make(p)), b(3, 11, chain_config(*model), info->make(p));
    a.start_dispersed();
    a.begin_refresh();
    a.refresh_piece(rows.batch());
    auto run = [&](sampler::Chain& c, uint64_t k0, uint64_t k1) {
      for (uint64_t k = k0; k < k1; ++k) {
        if (c.snapshot().full_batch()) {
          c.full_piece(rows.batch());
          EXPECT_TRUE(c.full_step(k, false, true).is_ok());
        } else {
          EXPECT_TRUE(c.step(k, rows.slice((k % 5) * 10, 10), false, true).is_ok());
        }
      }
    };
    run(a, 0, 7);
    MemFile file = saved([&](CheckpointOut& out) { a.save(out); });
    CheckpointIn in = open_in(file);
    Status st = b.load(in);
    ASSERT_TRUE(st.is_ok()) << st.message();
    EXPECT_TRUE(in.done().is_ok());
    run(a, 7, 20);
    run(b, 7, 20);
    ASSERT_TRUE(a.sync(20, true).is_ok());
    ASSERT_TRUE(b.sync(20, true).is_ok());
    ASSERT_EQ(a.theta().size(), b.theta().size());
    for (size_t j = 0; j < a.theta().size(); ++j) EXPECT_EQ(a.theta()[j], b.theta()[j]) << "coordinate " << j;
    EXPECT_EQ(a.draw().tracked, b.draw().tracked);
    // Another chain's bytes are refused.
    sampler::Chain other(4, 11, chain_config(*model), info->make(p));
    CheckpointIn again = open_in(file);
    EXPECT_EQ(other.load(again).code(), Status::Code::kCorruption);
  }
}

TEST(CheckpointRoundTrip, MomentsDiagnosticsPredictive) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01;
  const size_t chains = 3;
  std::vector<std::vector<double>> states(chains, std::vector<double>(kD));
  auto draw = [&] {
    for (auto& s : states) {
      for (double& v : s) v = n01(rng);
    }
    std::vector<StridedSpan<const double>> spans(states.begin(), states.end());
    return spans;
  };
  sampler::PooledMoments ma(kD), mb(kD);
  diagnostics::OnlineDiagnostics da(kD, {1, 4, 7}, chains, 40), db(kD, {}, chains, 40);
  auto model = logistic();
  const Rows test(8, kN, kD);
  sampler::Predictive pa(kN, chains, *model), pb(kN, chains, *model);
  auto step = [&](auto spans, sampler::PooledMoments& m, diagnostics::OnlineDiagnostics& d, sampler::Predictive& p, bool pool) {
    m.prepare(chains);
    m.add(spans, 0, kD);
    m.next_draw(chains);
    d.add(spans, 0, d.covered());
    d.next_draw();
    std::vector<std::vector<double>> margins(chains, std::vector<double>(kN));
    std::vector<std::span<const double>> ms;
    for (size_t c = 0; c < chains; ++c) {
      for (size_t i = 0; i < kN; ++i) margins[c][i] = spans[c][i % kD];
      ms.emplace_back(margins[c]);
    }
    p.begin(pool);
    p.add(test.batch(), ms);
    EvalRecord e;
    p.end(&e);
    return e;
  };
  for (int t = 0; t < 13; ++t) step(draw(), ma, da, pa, t > 3);
  MemFile file = saved([&](CheckpointOut& out) {
    ma.save(out);
    da.save(out);
    pa.save(out);
  });
  CheckpointIn in = open_in(file);
  ASSERT_TRUE(mb.load(in).is_ok());
  ASSERT_TRUE(db.load(in).is_ok());  // the coordinates covered come from the checkpoint
  ASSERT_TRUE(pb.load(in).is_ok());
  EXPECT_TRUE(in.done().is_ok());
  EXPECT_EQ(db.covered(), 3u);
  for (int t = 0; t < 20; ++t) {
    const auto spans = draw();
    const EvalRecord ea = step(spans, ma, da, pa, true), eb = step(spans, mb, db, pb, true);
    EXPECT_EQ(ea.test_loglik, eb.test_loglik);
    EXPECT_EQ(ea.chain_test_loglik, eb.chain_test_loglik);
    EXPECT_EQ(ea.samples, eb.samples);
  }
  std::vector<double> mean_a, sd_a, mean_b, sd_b;
  ma.finish(&mean_a, &sd_a);
  mb.finish(&mean_b, &sd_b);
  EXPECT_EQ(mean_a, mean_b);
  EXPECT_EQ(sd_a, sd_b);
  std::vector<double> ra(kD), ea(kD), ca(kD), rb(kD), eb(kD), cb(kD);
  da.finish(ra, ea, ca);
  db.finish(rb, eb, cb);
  EXPECT_EQ(0, std::memcmp(ra.data(), rb.data(), kD * 8));  // NaN where not covered: bitwise
  EXPECT_EQ(0, std::memcmp(ea.data(), eb.data(), kD * 8));
  EXPECT_EQ(0, std::memcmp(ca.data(), cb.data(), kD * 8));
  // Diagnostics of another shape refuse the bytes.
  diagnostics::OnlineDiagnostics other(kD, {}, chains + 1, 40);
  CheckpointIn again = open_in(file);
  ASSERT_TRUE(sampler::PooledMoments(kD).load(again).is_ok());
  EXPECT_EQ(other.load(again).code(), Status::Code::kCorruption);
}

}  // namespace checkpoint_test
}  // namespace
}  // namespace agld::test
