// A disk that fills while a run writes its run directory (issue #17 part 4; docs/reliability.md,
// "Faults"): the run stops with one error naming the file and the system's "No space left on
// device"; the run directory then holds its last complete checkpoint, untouched, and nothing
// else (no partial draws file, no partial checkpoint); resuming from that checkpoint gives the
// run that never stopped. The disk is tests/file/fault_fs.hpp's FaultFileSystem, given to
// RunWriter as the CLI gives it the local one; the full disk is set, from a first run's log of
// writes, to fail at a chosen write of a rerun.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "../file/fault_fs.hpp"
#include "agld/checkpoint.hpp"
#include "agld/run_output.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace disk_full_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 30;

SparseRows rows_of(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(0, kDim - 1);
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (int e = 0; e < 4; ++e) {
      const uint32_t j = feature(rng);
      if (std::find(idx.begin(), idx.end(), j) != idx.end()) continue;
      idx.push_back(j);
      val.push_back(static_cast<float>(n01(rng)));
    }
    std::sort(idx.begin(), idx.end());
    rows.add_row(n01(rng) > 0 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

// Long enough, and tracking every coordinate, for each chain's draws file to pass the
// writer's 1 MiB buffer mid-run (about 400 bytes a kept state).
SampleOptions options() {
  SampleOptions o;
  o.method = "ptu-ca";
  o.seed = 17;
  o.chains = 2;
  o.threads = 1;
  o.batch = 30;
  o.iterations = 7000;
  o.burn_in = 1000;
  o.thin = 1;
  o.evaluations = 5;
  o.intercept = true;
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  for (uint64_t j = 0; j <= kDim; ++j) o.track.push_back(j);
  return o;
}

// What the CLI's observer does: the run directory through RunWriter, and a checkpoint at every
// `every`-th iteration offered.
class RunDirObserver final : public SampleObserver {
 public:
  RunDirObserver(RunWriter& w, uint64_t every) : w_(w), every_(every) {}
  Status on_start(const ResolvedSample& run) override { return w_.start(run, {"disk_full_test"}); }
  Status on_draw(const DrawRecord& d) override { return w_.draw(d); }
  Status on_eval(const EvalRecord& e) override { return w_.eval(e); }
  bool checkpoint_due(uint64_t, bool) override { return ++offers_ % every_ == 0; }
  Status on_checkpoint(uint64_t iteration, const std::function<Status(WritableFile&)>& save) override {
    AGLD_RETURN_IF_ERROR(w_.checkpoint(save));
    checkpoints.push_back(iteration);
    return Status::ok();
  }
  std::vector<uint64_t> checkpoints;  // the iterations of those written

 private:
  RunWriter& w_;
  uint64_t every_, offers_ = 0;
};

constexpr uint64_t kEvery = 1500;

// Runs (or, with a checkpoint, resumes) the run into dir, writing through fs.
Status run_into(const Store& store, const std::string& dir, FileSystem& fs, SampleResult* result,
                std::vector<uint64_t>* checkpoints = nullptr, const ReadableFile* from = nullptr) {
  std::unique_ptr<RunWriter> w;
  AGLD_RETURN_IF_ERROR(RunWriter::create(dir, fs, &w));
  RunDirObserver obs(*w, kEvery);
  Status st = from ? resume_sample(store, nullptr, options(), *from, obs, result)
                   : sample(store, nullptr, options(), obs, result);
  if (checkpoints) *checkpoints = obs.checkpoints;
  AGLD_RETURN_IF_ERROR(st);
  return w->finish(*result, "{}\n");
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = make_store(dir_.file("s.agld"), rows_of(test_seed(61), 300), kDim, true, 32);
    FaultFileSystem disk;
    ASSERT_TRUE(run_into(*store_, dir_.file("whole"), disk, &whole_, &checkpoints_).is_ok());
    events_ = disk.events;
    ASSERT_GE(checkpoints_.size(), 3u);
  }

  // The bytes written before the n-th (0-based) event of kind on a file whose name is `name`.
  uint64_t before(FaultFileSystem::Event::Kind kind, const std::string& name, size_t n) const {
    for (const FaultFileSystem::Event& e : events_) {
      if (e.kind == kind && std::filesystem::path(e.path).filename() == name && n-- == 0) return e.written_before;
    }
    ADD_FAILURE() << "no such write of " << name;
    return 0;
  }
  // How many checkpoints were complete when `written` bytes had been written.
  size_t checkpoints_before(uint64_t written) const {
    size_t n = 0;
    for (const FaultFileSystem::Event& e : events_) {
      if (e.kind == FaultFileSystem::Event::kCommit && e.path.ends_with("/checkpoint") && e.written_before <= written) ++n;
    }
    return n;
  }

  // Reruns into a fresh directory on a disk of `space` bytes: the run must fail with
  // "FILE: write failed: No space left on device", leave the last checkpoint written before
  // the disk filled (or nothing, and no directory, if there was none), and resume from it to
  // the whole run.
  void fill_at(uint64_t space, const std::string& file) {
    const size_t kept = checkpoints_before(space);
    SCOPED_TRACE("the disk full after " + std::to_string(space) + " bytes, in " + file + ", " +
                 std::to_string(kept) + " checkpoint(s) written");
    const std::string out = dir_.file("run_" + std::to_string(space));
    FaultFileSystem disk;
    disk.space = space;
    SampleResult r;
    std::vector<uint64_t> written;
    Status st = run_into(*store_, out, disk, &r, &written);
    ASSERT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
    EXPECT_EQ(st.message(), out + "/" + file + ": write failed: No space left on device");
    ASSERT_EQ(written.size(), kept);
    if (kept == 0) {
      EXPECT_FALSE(std::filesystem::exists(out)) << names(list_dir(out));
      return;
    }
    ASSERT_EQ(list_dir(out), std::vector<std::string>{"checkpoint"});
    std::unique_ptr<ReadableFile> f;
    ASSERT_TRUE(FileSystem::local().open_readable(out + "/checkpoint", &f).is_ok());
    CheckpointInfo info;
    ASSERT_TRUE(read_checkpoint_info(*f, &info).is_ok());
    EXPECT_EQ(info.iteration, checkpoints_[kept - 1]) << "not the last checkpoint written before the disk filled";
    SampleResult resumed;
    st = run_into(*store_, out, FileSystem::local(), &resumed, nullptr, f.get());
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(same_bits(resumed.mean, whole_.mean));
    EXPECT_TRUE(same_bits(resumed.sd, whole_.sd));
    EXPECT_EQ(resumed.tracked_draws, whole_.tracked_draws);
    for (const std::string& name : list_dir(dir_.file("whole"))) {
      if (name == "posterior.npy" || name == "diagnostics.npy") {
        EXPECT_TRUE(read_file(out + "/" + name) == read_file(dir_.file("whole/" + name))) << name;
      }
    }
  }

  static std::string names(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& n : v) s += n + " ";
    return s;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
  SampleResult whole_;
  std::vector<uint64_t> checkpoints_;
  std::vector<FaultFileSystem::Event> events_;
};

// The third checkpoint does not fit (100 bytes in, and one byte short of its end): the run
// stops, and the second is the one left, whole.
TEST_F(DiskFull, WhileWritingACheckpointKeepsThePreviousOne) {
  fill_at(before(FaultFileSystem::Event::kAppend, "checkpoint", 0) + 100, "checkpoint");  // the first: nothing kept
  const uint64_t third = before(FaultFileSystem::Event::kCreate, "checkpoint", 2);
  fill_at(third + 100, "checkpoint");
  fill_at(before(FaultFileSystem::Event::kCommit, "checkpoint", 2) - 1, "checkpoint");
}

// A draws file's buffer that does not fit mid-run, and one of the files the run writes at
// its end: the run stops with the last checkpoint kept.
TEST_F(DiskFull, WhileWritingDrawsOrTheEndKeepsTheLastCheckpoint) {
  const uint64_t draws = before(FaultFileSystem::Event::kAppend, "draws_2.csv", 0);
  ASSERT_LT(draws, before(FaultFileSystem::Event::kAppend, "posterior.npy", 0)) << "no draws written mid-run";
  ASSERT_GE(checkpoints_before(draws), 1u) << "the first checkpoint at iteration " << checkpoints_[0] << ", after "
                                           << before(FaultFileSystem::Event::kCommit, "checkpoint", 0)
                                           << " bytes; the first draws written after " << draws;
  fill_at(draws + 10, "draws_2.csv");
  fill_at(before(FaultFileSystem::Event::kAppend, "posterior.npy", 0) + 10, "posterior.npy");
  fill_at(before(FaultFileSystem::Event::kAppend, "config.json", 0), "config.json");
}

}  // namespace disk_full_test
}  // namespace
}  // namespace agld::test
