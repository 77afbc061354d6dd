// A conversion that fails for any reason (a full disk, a failing commit, a bad line far
// into the input, a signal) reports it and leaves nothing behind: no store, no temporary
// file, and whatever was at the output path before untouched. Faults are injected through
// the file-access interface (tests/file/fault_fs.hpp); the local implementation's
// fallback for file systems without O_TMPFILE is forced with a seccomp filter.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>
#include <span>
#include <thread>

#include "../file/fault_fs.hpp"
#include "agld/convert.hpp"
#include "agld/store.hpp"
#include "convert/shuffle.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace faults_test {  // this file's names (unity batches: tests/CMakeLists.txt)

namespace fs = std::filesystem;
using test::FaultFileSystem;
using test::TempDir;

// ---------------------------------------------------------------- helpers

std::string libsvm_text(size_t rows, uint64_t seed, uint32_t features = 2000) {
  test::RandomMatrixSpec spec;
  spec.rows = rows;
  spec.features = features;
  spec.max_row_nnz = 20;
  spec.long_row_prob = 0.005;
  std::mt19937_64 rng(seed);
  return test::to_libsvm(test::random_matrix(spec, rng));
}

// Reads every chunk; ok only if the whole store is good.
Status verify_store(const std::string& path, uint64_t* rows = nullptr) {
  std::unique_ptr<Store> s;
  AGLD_RETURN_IF_ERROR(Store::open(path, &s));
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) AGLD_RETURN_IF_ERROR(s->read_chunk(k, &c));
  if (rows) *rows = s->meta().rows;
  return Status::ok();
}

// The layout of a good store: where its chunks, metadata, index and footer begin.
struct Layout {
  uint64_t size = 0, meta_offset = 0, index_offset = 0;
  std::vector<uint64_t> chunk_offset;
};

Layout layout_of(const std::string& path) {
  std::unique_ptr<Store> s;
  Layout l;
  Status st = Store::open(path, &s);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  if (!st.is_ok()) return l;
  l.size = s->file_size();
  for (size_t k = 0; k < s->chunk_count(); ++k) l.chunk_offset.push_back(s->chunk(k).offset);
  const ChunkInfo& last = s->chunk(s->chunk_count() - 1);
  l.meta_offset = last.offset + last.stored_size;
  l.index_offset = l.size - 64 - 40 * s->chunk_count();
  return l;
}

// Byte budgets that stop a conversion at every stage of writing a store of the layout:
// the header, each chunk's start and middle, the metadata, the index, the footer.
std::vector<uint64_t> budgets(const Layout& l, uint64_t total) {
  std::set<uint64_t> n = {0, 1, 15, 16, 17};
  for (size_t k = 0; k < l.chunk_offset.size(); ++k) {
    const uint64_t end = k + 1 < l.chunk_offset.size() ? l.chunk_offset[k + 1] : l.meta_offset;
    n.insert(l.chunk_offset[k]);
    n.insert((l.chunk_offset[k] + end) / 2);
    n.insert(end - 1);
  }
  for (uint64_t x : {l.meta_offset, l.meta_offset + 1, (l.meta_offset + l.index_offset) / 2,
                     l.index_offset - 1, l.index_offset, l.index_offset + 20, l.size - 65,
                     l.size - 64, l.size - 63, l.size - 12, l.size - 1}) {
    n.insert(x);
  }
  // With two outputs the budget is shared: stop anywhere up to the total, too.
  for (uint64_t i = 1; i < 16; ++i) n.insert(total * i / 16);
  std::vector<uint64_t> v;
  for (uint64_t x : n) {
    if (x < total) v.push_back(x);
  }
  return v;
}

// A good store at path, converted from other text: what a failed conversion must not touch.
std::string put_existing_store(const std::string& path, uint64_t seed) {
  TempDir src;
  test::write_file(src.file("old.txt"), libsvm_text(150, seed));
  ConvertOptions opt;
  opt.inputs = {src.file("old.txt")};
  opt.output = path;
  opt.threads = 1;
  ConvertReport rep;
  Status st = convert(opt, &rep);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return test::read_file(path);
}

std::string names(const std::vector<std::string>& v) {
  std::string s = "{";
  for (const std::string& x : v) s += (s.size() > 1 ? ", " : "") + x;
  return s + "}";
}

// ---------------------------------------------------------------- disk full, failed commit

struct FaultCase {
  const char* name;
  const char* compression;
  bool shuffle;
  bool two_outputs;
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class ConvertFaults : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    test::write_file(in_.file("in.txt"), libsvm_text(900, 42));
  }
  ConvertOptions options(const fs::path& out_dir) const {
    ConvertOptions opt;
    opt.inputs = {in_.file("in.txt")};
    opt.output = (out_dir / "train.agld").string();
    opt.compression = GetParam().compression;
    opt.chunk_rows = 150;
    opt.threads = 2;
    opt.shuffle = GetParam().shuffle;
    opt.seed = 3;
    if (GetParam().two_outputs) {
      opt.test_fraction = 0.3;
      opt.test_output = (out_dir / "test.agld").string();
    }
    return opt;
  }
  std::vector<std::string> outputs() const {
    return GetParam().two_outputs ? std::vector<std::string>{"test.agld", "train.agld"}
                                  : std::vector<std::string>{"train.agld"};
  }
  TempDir in_;
};

TEST_P(ConvertFaults, DiskFullAtEveryStageLeavesNothing) {
  // A clean run through the fault FS gives the sizes to aim at.
  TempDir clean;
  FaultFileSystem probe;
  ConvertReport rep;
  Status st = convert(options(clean.path()), &rep, {}, probe);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const uint64_t total = probe.bytes_written();
  const Layout l = layout_of(clean.file("train.agld"));
  ASSERT_GE(l.chunk_offset.size(), 3u);
  ASSERT_EQ(test::list_dir(clean.path()), outputs());
  ASSERT_EQ(probe.faults_injected(), 0u);

  TempDir empty_dir, full_dir;  // no earlier outputs; earlier good outputs
  std::vector<std::string> before;
  for (const std::string& name : outputs()) {
    before.push_back(put_existing_store((full_dir.path() / name).string(), before.size() + 7));
  }
  const std::vector<uint64_t> ns = budgets(l, total);
  ASSERT_GE(ns.size(), 20u);
  for (uint64_t n : ns) {
    for (TempDir* dir : {&empty_dir, &full_dir}) {
      const bool existing = dir == &full_dir;
      SCOPED_TRACE("disk full after " + std::to_string(n) + " of " + std::to_string(total) +
                   " bytes" + (existing ? ", over earlier outputs" : ""));
      FaultFileSystem ffs;
      ffs.space = n;
      st = convert(options(dir->path()), &rep, {}, ffs);
      EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
      EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.message();
      EXPECT_EQ(ffs.faults_injected(), 1u);
      EXPECT_EQ(ffs.commits_attempted(), 0u);
      const std::vector<std::string> left = test::list_dir(dir->path());
      if (existing) {
        EXPECT_EQ(left, outputs()) << names(left);
        for (size_t i = 0; i < outputs().size(); ++i) {
          EXPECT_TRUE(test::read_file((dir->path() / outputs()[i]).string()) == before[i])
              << outputs()[i] << " was changed";
        }
      } else {
        EXPECT_TRUE(left.empty()) << names(left);
      }
    }
  }
  // Exactly enough room succeeds: the budgets above were all short of it.
  TempDir exact;
  FaultFileSystem ffs;
  ffs.space = total;
  st = convert(options(exact.path()), &rep, {}, ffs);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(test::list_dir(exact.path()), outputs());
  EXPECT_TRUE(verify_store(exact.file("train.agld")).is_ok());
}

TEST_P(ConvertFaults, FailedCommitLeavesNothing) {
  const size_t commits = outputs().size();
  for (uint64_t at = 0; at < commits; ++at) {
    for (bool existing : {false, true}) {
      SCOPED_TRACE("commit " + std::to_string(at) + " fails" + (existing ? ", over earlier outputs" : ""));
      TempDir dir;
      std::vector<std::string> before;
      if (existing) {
        for (const std::string& name : outputs()) {
          before.push_back(put_existing_store((dir.path() / name).string(), before.size() + 11));
        }
      }
      FaultFileSystem ffs;
      ffs.fail_commit_at = at;
      ConvertReport rep;
      Status st = convert(options(dir.path()), &rep, {}, ffs);
      EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
      EXPECT_EQ(ffs.faults_injected(), 1u);
      EXPECT_EQ(ffs.commits_attempted(), at + 1);
      const std::vector<std::string> left = test::list_dir(dir.path());
      if (!existing) {
        EXPECT_TRUE(left.empty()) << "a failed conversion left " << names(left);
        continue;
      }
      // What was there before is still there, unless an output committed before the
      // failing one already replaced it (two renames cannot be one atomic step); then the
      // new output is removed rather than left beside a missing partner.
      for (size_t i = 0; i < outputs().size(); ++i) {
        const std::string p = (dir.path() / outputs()[i]).string();
        const bool replaced_first = commits == 2 && at == 1 && outputs()[i] == "train.agld";
        if (replaced_first) {
          EXPECT_TRUE(!fs::exists(p) || test::read_file(p) == before[i]) << p << " is a new store";
        } else {
          EXPECT_TRUE(fs::exists(p) && test::read_file(p) == before[i]) << p << " was changed";
        }
      }
      for (const std::string& name : left) {
        EXPECT_TRUE(std::find(outputs().begin(), outputs().end(), name) != outputs().end())
            << "stray file " << name;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ConvertFaults,
    ::testing::Values(FaultCase{"zstd", "zstd", false, false}, FaultCase{"none", "none", false, false},
                      FaultCase{"zstd_shuffle", "zstd", true, false},
                      FaultCase{"zstd_two_outputs", "zstd", false, true},
                      FaultCase{"none_shuffle_two_outputs", "none", true, true}),
    [](const auto& p) { return std::string(p.param.name); });

// ---------------------------------------------------------------- an input that cannot be read
// The inputs go through the FileSystem too (FileSystem::open_input): a read error anywhere in
// an input, plain (read in parallel blocks with pread) or compressed (a stream), is one
// error naming the input, and nothing is left at the outputs.

TEST(ConvertInputFaults, ReadErrorAnywhereIsOneErrorAndLeavesNothing) {
  TempDir in;
  std::string text;
  const std::string block = libsvm_text(6000, 71, 50000);
  while (text.size() < (9u << 20)) text += block;  // three of the pipeline's 4 MiB blocks
  test::write_file(in.file("in.txt"), text);
  auto r = test::run_shell("gzip -1 -c " + test::shell_arg(in.file("in.txt")) + " > " + test::shell_arg(in.file("in.gz")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::mt19937_64 rng(test::test_seed(73));  // prints the seed
  for (const char* name : {"in.txt", "in.gz"}) {
    const std::string input = in.file(name);
    const uint64_t size = fs::file_size(input);
    const std::vector<uint64_t> at = {0, 3, 6, 4u << 20, size - 1, std::uniform_int_distribution<uint64_t>(7, size - 2)(rng)};
    for (uint64_t a : at) {
      for (bool shuffle : {false, true}) {
        SCOPED_TRACE(std::string(name) + ", the read at byte " + std::to_string(a) + " of " + std::to_string(size) +
                     " fails" + (shuffle ? ", shuffled" : ", in order"));
        TempDir out;
        ConvertOptions opt;
        opt.inputs = {input};
        opt.output = out.file("x.agld");
        opt.test_fraction = 0.2;
        opt.test_output = out.file("t.agld");
        opt.threads = 2;
        opt.shuffle = shuffle;
        FaultFileSystem ffs;
        ffs.input_error_at = a;
        ConvertReport rep;
        Status st = convert(opt, &rep, {}, ffs);
        EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
        EXPECT_EQ(st.message(), input + ": read failed: Input/output error");
        EXPECT_GE(ffs.faults_injected(), 1u);
        EXPECT_TRUE(test::list_dir(out.path()).empty()) << names(test::list_dir(out.path()));
      }
    }
    // A fault past the end of the file is never reached: the conversion succeeds.
    TempDir out;
    ConvertOptions opt;
    opt.inputs = {input};
    opt.output = out.file("x.agld");
    FaultFileSystem ffs;
    ffs.input_error_at = size + 1;
    ConvertReport rep;
    Status st = convert(opt, &rep, {}, ffs);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_TRUE(verify_store(opt.output).is_ok());
  }
}

// ---------------------------------------------------------------- the shuffle's runs
// The external shuffle writes its sorted runs through the FileSystem too (create_scratch): a
// full disk while a run is spilled, or while runs are merged into one, is one I/O error naming
// the temporary directory and the system's reason, and the conversion leaves nothing.

// The budgets at which a scratch file's write fails: at the first byte of the first one, and a
// little into the nth (from 0), from a clean run's events.
std::vector<uint64_t> scratch_budgets(const FaultFileSystem& probe, size_t nth) {
  std::vector<uint64_t> created;
  for (const FaultFileSystem::Event& e : probe.events) {
    if (e.kind == FaultFileSystem::Event::kCreate && e.path.rfind("scratch in ", 0) == 0) {
      created.push_back(e.written_before);
    }
  }
  EXPECT_GT(created.size(), nth);
  if (created.size() <= nth) return {};
  return {created[0], created[nth] + 1000};
}

TEST(ShuffleSpillFaults, DiskFullWhileSpillingOrMergingIsOneError) {
  std::mt19937_64 rng(test::test_seed(31));  // prints the seed
  test::RandomMatrixSpec spec;
  spec.rows = 20000;
  const SparseRows rows = test::random_matrix(spec, rng);
  TempDir dir;
  // Every row through a shuffler of 256 KiB: more runs than fan_in(), so runs are merged.
  auto shuffle = [&](FileSystem& files, SparseRows* out) {
    ExternalShuffler sh(7, 256 << 10, dir.path().string(), files);
    for (size_t r = 0; r < rows.rows(); ++r) AGLD_RETURN_IF_ERROR(sh.add(rows, r, r));
    AGLD_RETURN_IF_ERROR(sh.finish());
    for (bool done = false; !done;) AGLD_RETURN_IF_ERROR(sh.next(out, 997, 1 << 20, &done));
    return Status::ok();
  };
  // A clean run through the fault FS: every run went through it, and came back whole.
  FaultFileSystem probe;
  SparseRows clean, local;
  ASSERT_TRUE(shuffle(probe, &clean).is_ok());
  ASSERT_TRUE(shuffle(FileSystem::local(), &local).is_ok());
  EXPECT_EQ(clean, local);
  EXPECT_EQ(clean.rows(), rows.rows());
  EXPECT_EQ(probe.files_created(), 0u);
  ASSERT_GT(probe.scratch_created(), 9u);
  // The 9th run is the first merged one (fan_in() is 8 at this memory).
  const std::vector<uint64_t> spill = scratch_budgets(probe, 1), merge = scratch_budgets(probe, 8);
  ASSERT_EQ(spill.size(), 2u);
  ASSERT_EQ(merge.size(), 2u);
  for (auto [space, stage] : {std::pair{spill[0], "writing a temporary run in "},
                              std::pair{spill[1], "writing a temporary run in "},
                              std::pair{merge[1], "merging temporary runs in "}}) {
    SCOPED_TRACE("disk full after " + std::to_string(space) + " bytes");
    FaultFileSystem ffs;
    ffs.space = space;
    SparseRows out;
    const Status st = shuffle(ffs, &out);
    EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
    EXPECT_EQ(st.message(),
              "shuffle: " + std::string(stage) + dir.path().string() +
                  " failed: No space left on device (--temp-dir puts them elsewhere)");
    EXPECT_EQ(ffs.faults_injected(), 1u);
  }
  EXPECT_TRUE(test::list_dir(dir.path()).empty()) << names(test::list_dir(dir.path()));
}

TEST(ConvertShuffleSpill, DiskFullInARunIsOneErrorAndLeavesNothing) {
  TempDir in, spill;
  std::string text;
  const std::string block = libsvm_text(8000, 77, 100000);
  while (text.size() < (24u << 20)) text += block;  // at --memory 64M, two runs
  test::write_file(in.file("big.txt"), text);
  text.clear();
  auto options = [&](const TempDir& out) {
    ConvertOptions opt;
    opt.inputs = {in.file("big.txt")};
    opt.output = out.file("x.agld");
    opt.memory = 64 << 20;
    opt.temp_dir = spill.path().string();
    opt.threads = 2;
    return opt;
  };
  TempDir clean;
  FaultFileSystem probe;
  ConvertReport rep;
  Status st = convert(options(clean), &rep, {}, probe);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(rep.shuffle_runs, 2u);
  ASSERT_EQ(probe.scratch_created(), 2u);
  const std::vector<uint64_t> budgets = scratch_budgets(probe, 1);
  ASSERT_EQ(budgets.size(), 2u);
  TempDir full;
  const std::string before = put_existing_store(full.file("x.agld"), 17);
  for (uint64_t space : budgets) {
    for (const TempDir* out : {&clean, &full}) {
      const bool existing = out == &full;
      SCOPED_TRACE("disk full after " + std::to_string(space) + " bytes" +
                   (existing ? ", over an earlier store" : ""));
      if (!existing) fs::remove(clean.file("x.agld"));
      FaultFileSystem ffs;
      ffs.space = space;
      st = convert(options(*out), &rep, {}, ffs);
      EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
      EXPECT_EQ(st.message(),
                "shuffle: writing a temporary run in " + spill.path().string() +
                    " failed: No space left on device (--temp-dir puts them elsewhere)");
      EXPECT_EQ(ffs.faults_injected(), 1u);
      EXPECT_EQ(ffs.commits_attempted(), 0u);
      EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
      if (existing) {
        EXPECT_EQ(test::list_dir(out->path()), std::vector<std::string>{"x.agld"})
            << names(test::list_dir(out->path()));
        EXPECT_TRUE(test::read_file(full.file("x.agld")) == before)
            << "the earlier store was changed";
      } else {
        EXPECT_TRUE(test::list_dir(out->path()).empty()) << names(test::list_dir(out->path()));
      }
    }
  }
}

// ---------------------------------------------------------------- a bad line far in

std::string big_text_with_bad_last_line(size_t min_bytes, uint64_t* lines) {
  const std::string block = libsvm_text(4000, 5, 50000);
  std::string text;
  while (text.size() < min_bytes) text += block;
  *lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  text += "+1 3:1 x:2\n";  // no index before the colon
  return text;
}

TEST(ConvertFailsLate, BadLineAtTheEndLeavesNothing) {
  TempDir in, out;
  uint64_t bad_line;
  const std::string text = big_text_with_bad_last_line(9u << 20, &bad_line);
  test::write_file(in.file("big.txt"), text);
  const std::string target = out.file("x.agld");

  // Through the library and the fault FS: the output was being written, then discarded.
  FaultFileSystem ffs;
  ConvertOptions opt;
  opt.inputs = {in.file("big.txt")};
  opt.output = target;
  opt.threads = 2;
  opt.chunk_rows = 5000;
  ConvertReport rep;
  Status st = convert(opt, &rep, {}, ffs);
  EXPECT_EQ(st.code(), Status::Code::kDataError) << st.to_string();
  EXPECT_NE(st.message().find(":" + std::to_string(bad_line) + ":"), std::string::npos) << st.message();
  EXPECT_EQ(ffs.files_created(), 1u);
  EXPECT_EQ(ffs.commits_attempted(), 0u);
  EXPECT_TRUE(test::list_dir(out.path()).empty()) << names(test::list_dir(out.path()));

  // Through the CLI: exit 65, one line, nothing left; then over an earlier good store.
  for (bool existing : {false, true}) {
    SCOPED_TRACE(existing ? "over an earlier store" : "no earlier store");
    std::string before;
    if (existing) before = put_existing_store(target, 13);
    test::RunResult r = test::run_agld("convert '" + in.file("big.txt") + "' -o '" + target + "' --threads 2");
    EXPECT_EQ(r.exit_code, 65) << r.err;
    EXPECT_EQ(r.err.rfind("agld: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    const std::vector<std::string> left = test::list_dir(out.path());
    if (existing) {
      EXPECT_EQ(left, std::vector<std::string>{"x.agld"}) << names(left);
      EXPECT_TRUE(test::read_file(target) == before) << "the earlier store was changed";
    } else {
      EXPECT_TRUE(left.empty()) << names(left);
    }
  }
}

// ---------------------------------------------------------------- processes

// Installs a seccomp filter under which opening with O_TMPFILE fails with EOPNOTSUPP, as on
// a file system without it. Inherited by exec. False when the kernel will not have it.
bool deny_o_tmpfile() {
#if defined(__x86_64__)
  constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
#ifdef __NR_open
  constexpr uint32_t kOpen = __NR_open;
#else
  constexpr uint32_t kOpen = 0xFFFFFFFF;  // no such syscall
#endif
  constexpr uint32_t kTmp = __O_TMPFILE;
  sock_filter filter[] = {
      /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 0, 9),
      /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 3),
      /* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2])),
      /* 5 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, kTmp),
      /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kTmp, 5, 4),
      /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kOpen, 0, 3),
      /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])),
      /* 9 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, kTmp),
      /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kTmp, 1, 0),
      /* 11 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      /* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EOPNOTSUPP & SECCOMP_RET_DATA)),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

constexpr int kNoSeccomp = 99;

// Starts agld with args (stdout and stderr to err_file), optionally without O_TMPFILE.
pid_t spawn_agld(const std::vector<std::string>& args, const std::string& err_file, bool no_tmpfile) {
  std::vector<std::string> argv_s = {AGLD_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (null >= 0) ::dup2(null, 0);
    if (no_tmpfile && !deny_o_tmpfile()) ::_exit(kNoSeccomp);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The size of the file pid has open in dir (its output being written), or -1.
int64_t output_in_progress(pid_t pid, const fs::path& dir) {
  std::error_code ec;
  const std::string prefix = fs::canonical(dir).string() + "/";
  for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code ec2;
    fs::path target = fs::read_symlink(e.path(), ec2);
    if (ec2 || target.string().rfind(prefix, 0) != 0) continue;
    struct stat st;
    if (::stat(e.path().c_str(), &st) == 0) return st.st_size;
  }
  return -1;
}

std::string big_input(const TempDir& in) {
  const std::string block = libsvm_text(8000, 77, 100000);
  std::string text;
  text.reserve((50u << 20) + block.size());
  while (text.size() < (50u << 20)) text += block;
  const std::string path = in.file("big.txt");
  test::write_file(path, text);
  return path;
}

// How a conversion orders its rows, for the interruption tests.
enum class Order {
  kKept,     // --keep-order: the output grows while the input is read
  kShuffle,  // the default: the whole input is read and shuffled in memory, then written
  kSpill,    // the default with --memory 64M: sorted runs spill to --temp-dir ...
  kMerge,    // ... and are merged into the output (interrupted then)
};

const char* order_name(Order o) {
  switch (o) {
    case Order::kKept: return "--keep-order";
    case Order::kShuffle: return "shuffled";
    case Order::kSpill: return "shuffled, spilling runs";
    case Order::kMerge: return "shuffled, merging runs";
  }
  return "";
}

// Runs a slow conversion, interrupts it with sig once it has written some of its output
// (with Order::kSpill, once a temporary run in spill_dir holds some rows; with kMerge, once
// the runs are being merged into the output), and checks that it died of the signal.
// With no_tmpfile, under a seccomp filter that denies O_TMPFILE (returns false when
// seccomp is unavailable).
bool interrupt_conversion(const std::string& input, const fs::path& out_dir, int sig,
                          bool no_tmpfile = false, Order order = Order::kKept,
                          const fs::path& spill_dir = {}) {
  TempDir logs;
  const std::string log = logs.file("stderr");
  // zstd:19 on one thread: slow enough to be caught mid-way on any machine.
  std::vector<std::string> args = {"convert", input, "-o", (out_dir / "x.agld").string(), "--threads", "1",
                                   "--compression", "zstd:19", "--chunk-bytes", "64K", "--quiet"};
  if (order == Order::kKept) args.push_back("--keep-order");
  if (order == Order::kSpill || order == Order::kMerge) {
    for (const std::string& a : {std::string("--memory"), std::string("64M"), std::string("--temp-dir"),
                                 spill_dir.string()}) {
      args.push_back(a);
    }
  }
  const fs::path watched = order == Order::kSpill ? spill_dir : out_dir;
  pid_t pid = spawn_agld(args, log, no_tmpfile);
  EXPECT_GT(pid, 0);
  if (pid <= 0) return true;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool exited = false;
  int64_t written = -1;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = true;
      break;
    }
    written = output_in_progress(pid, watched);
    // Merging: the runs are still open while the output grows.
    if (order == Order::kMerge && output_in_progress(pid, spill_dir) < 0) written = -1;
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t >= 0.2 && written > 1000) break;  // a chunk or more is in the output
    if (t > 20) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (exited && WIFEXITED(status) && WEXITSTATUS(status) == kNoSeccomp) return false;
  EXPECT_FALSE(exited) << "agld finished before it could be interrupted: " << test::read_file(log);
  EXPECT_GT(written, 1000) << "agld never started writing its output";
  if (exited) return true;
  EXPECT_EQ(::kill(pid, sig), 0);
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
      << "status " << status << ": " << test::read_file(log);
  return true;
}

TEST(ConvertInterrupted, WithoutOTmpfileSigintAndSigtermLeaveNothing) {
  TempDir in;
  const std::string input = big_input(in);
  for (Order order : {Order::kKept, Order::kShuffle, Order::kSpill, Order::kMerge}) {
    for (int sig : {SIGINT, SIGTERM}) {
      SCOPED_TRACE(std::string(strsignal(sig)) + ", " + order_name(order));
      TempDir out, spill;
      if (!interrupt_conversion(input, out.path(), sig, /*no_tmpfile=*/true, order, spill.path())) {
        GTEST_SKIP() << "seccomp unavailable";
      }
      EXPECT_TRUE(test::list_dir(out.path()).empty()) << names(test::list_dir(out.path()));
      EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
      const std::string before = put_existing_store(out.file("x.agld"), 22);
      interrupt_conversion(input, out.path(), sig, /*no_tmpfile=*/true, order, spill.path());
      EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"})
          << names(test::list_dir(out.path()));
      EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
      EXPECT_TRUE(test::read_file(out.file("x.agld")) == before) << "the earlier store was changed";
    }
  }
}

TEST(ConvertInterrupted, SigkillSigintAndSigtermLeaveNothing) {
  TempDir in;
  const std::string input = big_input(in);
  for (Order order : {Order::kKept, Order::kShuffle, Order::kSpill, Order::kMerge}) {
    for (int sig : {SIGKILL, SIGINT, SIGTERM}) {
      SCOPED_TRACE(std::string(strsignal(sig)) + ", " + order_name(order));
      TempDir out, spill;
      interrupt_conversion(input, out.path(), sig, false, order, spill.path());
      EXPECT_TRUE(test::list_dir(out.path()).empty()) << names(test::list_dir(out.path()));
      EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
      // Over an earlier store: it is untouched.
      const std::string before = put_existing_store(out.file("x.agld"), 21);
      interrupt_conversion(input, out.path(), sig, false, order, spill.path());
      EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"})
          << names(test::list_dir(out.path()));
      EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
      EXPECT_TRUE(test::read_file(out.file("x.agld")) == before) << "the earlier store was changed";
    }
  }
}

// The local FileSystem's named-temporary fallback (no O_TMPFILE): the temporary is where
// expected while writing, and gone after a commit, an abandoned write, or a failure.
// A process killed by SIGKILL leaves "<output>.tmp.<pid>.<n>" behind on such a file system
// (only O_TMPFILE avoids that); SIGINT, SIGTERM and SIGHUP are handled by the CLI, which
// removes it (ConvertInterrupted.WithoutOTmpfileSigintAndSigtermLeaveNothing).
TEST(LocalFileSystemFallback, NamedTemporaryIsRemovedOrRenamed) {
  TempDir dir;
  const std::string target = dir.file("x.agld");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!deny_o_tmpfile()) ::_exit(kNoSeccomp);
    auto fail = [](int code, const std::string& what) {
      std::fprintf(stderr, "fallback check %d failed: %s\n", code, what.c_str());
      ::_exit(code);
    };
    auto listing = [&] { return names(test::list_dir(dir.path())); };
    const std::string data = "some bytes of a store";
    const ByteSpan bytes = std::as_bytes(std::span(data.data(), data.size()));
    {
      std::unique_ptr<WritableFile> f;
      Status st = FileSystem::local().create_atomic(target, &f);
      if (!st.is_ok()) fail(1, st.to_string());
      std::vector<std::string> left = test::list_dir(dir.path());
      if (left.size() != 1 || left[0].rfind("x.agld.tmp.", 0) != 0) {
        fail(2, "expected a named temporary, found " + listing());
      }
      if (!f->append(bytes).is_ok()) fail(3, "append");
    }  // abandoned
    if (!test::list_dir(dir.path()).empty()) fail(4, "abandoned write left " + listing());
    {
      std::unique_ptr<WritableFile> f;
      if (!FileSystem::local().create_atomic(target, &f).is_ok()) fail(5, "create");
      if (!f->append(bytes).is_ok()) fail(6, "append");
      Status st = f->commit();
      if (!st.is_ok()) fail(7, st.to_string());
    }
    if (listing() != "{x.agld}" || test::read_file(target) != data) fail(8, "after commit: " + listing());
    {
      std::unique_ptr<WritableFile> f;
      if (!FileSystem::local().create_atomic(target, &f).is_ok()) fail(9, "create");
      if (!f->append(bytes).is_ok() || !f->append(bytes).is_ok()) fail(10, "append");
    }  // abandoned over an existing file
    if (listing() != "{x.agld}" || test::read_file(target) != data) fail(11, "after abandon: " + listing());
    // A commit whose rename fails (the target became a directory) removes the temporary.
    fs::remove(target);
    {
      std::unique_ptr<WritableFile> f;
      if (!FileSystem::local().create_atomic(target, &f).is_ok()) fail(12, "create");
      if (!f->append(bytes).is_ok()) fail(13, "append");
      fs::create_directory(target);
      fs::create_directory(fs::path(target) / "keep");  // a non-empty directory: rename fails
      if (f->commit().is_ok()) fail(14, "commit over a non-empty directory succeeded");
    }
    if (listing() != "{x.agld}" || !fs::is_directory(target)) fail(15, "after failed commit: " + listing());
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died: status " << status;
  if (WEXITSTATUS(status) == kNoSeccomp) GTEST_SKIP() << "seccomp unavailable";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's message above";
}

// The default shuffle spilling sorted runs (--memory 64M): a good conversion leaves just the
// store, a bad line at the end of the input nothing, and neither a temporary run, with
// O_TMPFILE and without it (runs then have a name for an instant, unlinked at once).
TEST(ConvertShuffleSpill, LeavesNoTemporaryRun) {
  TempDir in;
  const std::string input = big_input(in);
  std::string text = test::read_file(input);
  const uint64_t lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
  text += "+1 3:1 x:2\n";
  test::write_file(in.file("bad.txt"), text);
  text.clear();
  for (bool no_tmpfile : {false, true}) {
    SCOPED_TRACE(no_tmpfile ? "without O_TMPFILE" : "with O_TMPFILE");
    TempDir out, spill, logs;
    auto run = [&](const std::string& file) {
      pid_t pid = spawn_agld({"convert", file, "-o", out.file("x.agld"), "--memory", "64M", "--temp-dir",
                              spill.path().string(), "--json", "--threads", "2"},
                             logs.file("log"), no_tmpfile);
      int status = 0;
      EXPECT_EQ(::waitpid(pid, &status, 0), pid);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    };
    int rc = run(input);
    if (rc == kNoSeccomp) GTEST_SKIP() << "seccomp unavailable";
    const std::string log = test::read_file(logs.file("log"));
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("\"shuffle_runs\": "), std::string::npos) << log;
    EXPECT_EQ(log.find("\"shuffle_runs\": 0,"), std::string::npos) << "nothing spilled: " << log;
    EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"}) << names(test::list_dir(out.path()));
    EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
    uint64_t rows = 0;
    EXPECT_TRUE(verify_store(out.file("x.agld"), &rows).is_ok());
    EXPECT_EQ(rows, lines);
    const std::string good = test::read_file(out.file("x.agld"));
    rc = run(in.file("bad.txt"));
    EXPECT_EQ(rc, 65) << test::read_file(logs.file("log"));
    EXPECT_NE(test::read_file(logs.file("log")).find(":" + std::to_string(lines + 1) + ":"), std::string::npos)
        << test::read_file(logs.file("log"));
    EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"}) << names(test::list_dir(out.path()));
    EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
    EXPECT_TRUE(test::read_file(out.file("x.agld")) == good) << "the earlier store was changed";
  }
}

// The CLI without O_TMPFILE: a good conversion leaves just the store; a bad line far in
// leaves nothing.
TEST(LocalFileSystemFallback, ConvertLeavesNoTemporary) {
  TempDir in, out, logs;
  test::write_file(in.file("small.txt"), libsvm_text(500, 9));
  uint64_t bad_line;
  test::write_file(in.file("bad.txt"), big_text_with_bad_last_line(9u << 20, &bad_line));
  auto run = [&](const std::string& input) {
    pid_t pid = spawn_agld({"convert", input, "-o", out.file("x.agld"), "--chunk-rows", "100"},
                           logs.file("err"), true);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  int rc = run(in.file("small.txt"));
  if (rc == kNoSeccomp) GTEST_SKIP() << "seccomp unavailable";
  EXPECT_EQ(rc, 0) << test::read_file(logs.file("err"));
  EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"})
      << names(test::list_dir(out.path()));
  uint64_t rows = 0;
  EXPECT_TRUE(verify_store(out.file("x.agld"), &rows).is_ok());
  EXPECT_EQ(rows, 500u);
  const std::string good = test::read_file(out.file("x.agld"));

  rc = run(in.file("bad.txt"));
  EXPECT_EQ(rc, 65) << test::read_file(logs.file("err"));
  EXPECT_EQ(test::list_dir(out.path()), std::vector<std::string>{"x.agld"})
      << names(test::list_dir(out.path()));
  EXPECT_TRUE(test::read_file(out.file("x.agld")) == good);
}

}  // namespace faults_test
}  // namespace
}  // namespace agld
