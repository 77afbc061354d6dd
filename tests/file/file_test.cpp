// ReadableFile::read_uncached: the bytes asked for, wherever they sit against the 4 KiB
// blocks an O_DIRECT read takes; none of them left in the page cache; a file cut short
// while open fails with a message rather than a crash; the default implementation (used by
// the fault-injecting file system) serves what view() serves. And the memory map's guard
// against a file cut short under it (mapping_guard.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <linux/magic.h>
#include <vector>

#include "agld/file.hpp"
#include "fault_fs.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace file_test {  // this file's names (unity batches: tests/CMakeLists.txt)

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>((i * 131) ^ (i >> 9)));
  return b;
}

void write_file(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::unique_ptr<ReadableFile> open_local(const std::string& path) {
  std::unique_ptr<ReadableFile> f;
  Status st = FileSystem::local().open_readable(path, &f);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return f;
}

TEST(ReadUncached, ReadsTheBytesWhereverTheyAre) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  const size_t size = 5 * 4096 + 123;  // ends inside a block
  const auto bytes = pattern(size);
  write_file(path, bytes);
  auto f = open_local(path);
  ReadBuffer buf;  // one buffer for every read, growing and shrinking
  const std::vector<std::pair<uint64_t, size_t>> reads = {
      {0, 1},    {0, 4096}, {1, 4095}, {4095, 2},     {4095, 4098}, {100, 9000},
      {0, size}, {size - 1, 1}, {size - 123, 123}, {size - 5000, 5000}, {8192, 4096}, {7, 0},
      {size, 0}};
  for (auto [offset, n] : reads) {
    ByteSpan out;
    Status st = f->read_uncached(offset, n, &buf, &out);
    ASSERT_TRUE(st.is_ok()) << offset << " " << n << ": " << st.to_string();
    ASSERT_EQ(out.size(), n);
    ASSERT_TRUE(std::equal(out.begin(), out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(offset)))
        << offset << " " << n;
  }
}

TEST(ReadUncached, OutsideTheFileFails) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  write_file(path, pattern(10000));
  auto f = open_local(path);
  ReadBuffer buf;
  ByteSpan out;
  for (auto [offset, n] : std::vector<std::pair<uint64_t, size_t>>{{9999, 2}, {10001, 0}, {0, 10001}}) {
    Status st = f->read_uncached(offset, n, &buf, &out);
    ASSERT_FALSE(st.is_ok()) << offset << " " << n;
    EXPECT_NE(st.message().find("past the end of the file"), std::string::npos) << st.to_string();
  }
}

TEST(ReadUncached, LeavesNoPageInThePageCache) {
  test::TempDir dir;
  struct statfs fs;
  ASSERT_EQ(::statfs(dir.path().c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "tmpfs: its pages are the file";
  const std::string path = dir.file("f");
  const size_t size = (4 << 20) + 777;
  write_file(path, pattern(size));
  {  // out of the page cache first
    const int fd = ::open(path.c_str(), O_RDONLY);
    ASSERT_EQ(::fdatasync(fd), 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
  test::Residency resident(path);
  ASSERT_TRUE(resident.ok());
  ASSERT_EQ(resident.bytes(), 0u) << "the written file stayed in the page cache";
  auto f = open_local(path);
  const uint64_t after_open = resident.bytes();  // nothing read yet (a mapping, unused)
  ReadBuffer buf;
  ByteSpan out;
  for (uint64_t offset = 1000; offset + 300000 < size; offset += 250000) {
    ASSERT_TRUE(f->read_uncached(offset, 300000, &buf, &out).is_ok());
  }
  EXPECT_EQ(resident.bytes(), after_open);
}

TEST(ReadUncached, AFileCutShortWhileOpenFailsWithAMessage) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  write_file(path, pattern(64 << 10));
  auto f = open_local(path);
  ASSERT_EQ(::truncate(path.c_str(), 10000), 0);
  ReadBuffer buf;
  ByteSpan out;
  for (auto [offset, n] : std::vector<std::pair<uint64_t, size_t>>{{20000, 100}, {9000, 5000}}) {
    Status st = f->read_uncached(offset, n, &buf, &out);
    ASSERT_FALSE(st.is_ok()) << offset;
    EXPECT_NE(st.message().find("truncated while open"), std::string::npos) << st.to_string();
  }
  ASSERT_TRUE(f->read_uncached(100, 9000, &buf, &out).is_ok());  // what is left reads
}

TEST(ReadUncached, TheDefaultServesWhatViewServes) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  const auto bytes = pattern(9000);
  write_file(path, bytes);
  test::FaultFileSystem faults;
  faults.flips.push_back({4321, 0xFF});
  std::unique_ptr<ReadableFile> f;
  ASSERT_TRUE(faults.open_readable(path, &f).is_ok());
  ReadBuffer buf;
  ByteSpan out, view;
  ASSERT_TRUE(f->read_uncached(4000, 1000, &buf, &out).is_ok());
  ASSERT_TRUE(f->view(4000, 1000, &view).is_ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), view.begin(), view.end()));
  EXPECT_EQ(out[321], bytes[4321] ^ std::byte{0xFF});
  EXPECT_FALSE(f->read_uncached(8500, 1000, &buf, &out).is_ok());
}

// mapping_guard.hpp: a view of a file cut short under its map reads zeros past the new end
// rather than dying of SIGBUS, and the file says it changed; a SIGBUS outside the guarded
// maps still kills the process.
TEST(MappingGuard, ATruncatedMapReadsZerosAndSaysSo) {
  test::TempDir dir;
  const std::string path = dir.file("f");
  const std::vector<std::byte> bytes = pattern(64 << 10);
  write_file(path, bytes);
  auto f = open_local(path);
  ByteSpan v;
  ASSERT_TRUE(f->view(0, bytes.size(), &v).is_ok());
  EXPECT_TRUE(f->check_unchanged().is_ok());
  ASSERT_EQ(::truncate(path.c_str(), 10000), 0);
  const volatile std::byte* p = v.data();
  auto at = [&](size_t i) { return std::to_integer<int>(p[i]); };
  EXPECT_EQ(at(9999), std::to_integer<int>(bytes[9999]));  // before the new end
  EXPECT_EQ(at(40000), 0);                                  // pages wholly past it: a fault, then zeros
  EXPECT_EQ(at(65535), 0);
  Status st = f->check_unchanged();
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(st.message().rfind(path + ": the file changed while it was being read", 0), 0u) << st.to_string();
  EXPECT_NE(st.message().find("fell past its end"), std::string::npos) << st.to_string();
  // A file that only shrank (no page read past its end) says so by its size.
  write_file(path, bytes);
  auto g = open_local(path);
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  st = g->check_unchanged();
  EXPECT_NE(st.message().find("65536 bytes when opened, 100 now"), std::string::npos) << st.to_string();
}

TEST(MappingGuard, ASigbusElsewhereStillKills) {
  test::TempDir dir;
  write_file(dir.file("guarded"), pattern(8192));
  write_file(dir.file("other"), pattern(8192));
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    std::unique_ptr<ReadableFile> f;  // installs the guard's handler
    if (!FileSystem::local().open_readable(dir.file("guarded"), &f).is_ok()) ::_exit(2);
    const int fd = ::open(dir.file("other").c_str(), O_RDONLY);
    void* m = ::mmap(nullptr, 8192, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED || ::truncate(dir.file("other").c_str(), 0) != 0) ::_exit(3);
    const volatile char* c = static_cast<const char*>(m);
    ::_exit(c[5000] == 0 ? 4 : 5);  // not reached: SIGBUS
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
#ifdef AGLD_TEST_MEMORY_SANITIZER
  // The sanitizer's own SIGBUS handler was there first: it reports the fault and exits 1, or
  // aborts (ASAN_OPTIONS=abort_on_error=1, as scripts/sanitize.sh runs it).
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 1) << "the sanitizer's handler did not get the fault";
    return;
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) return;
#endif
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status;
}

// The temporaries of writers that no longer run go; those of live processes (this one, its
// parent), and names that only look like temporaries, stay.
TEST(StaleTemporaries, OnlyThoseOfProcessesThatNoLongerRunAreRemoved) {
  test::TempDir dir;
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);  // reaped: its id names no process
  const std::string gone = "checkpoint.tmp." + std::to_string(dead) + ".14";
  const std::vector<std::string> kept = {
      "checkpoint",
      "checkpoint.tmp." + std::to_string(::getpid()) + ".2",
      "posterior.npy.tmp." + std::to_string(::getppid()) + ".0",
      "checkpoint.tmp.x" + std::to_string(dead) + ".1",
      ".tmp." + std::to_string(dead) + ".1",
      "checkpoint.tmp." + std::to_string(dead),
      "notes.tmp",
  };
  for (const std::string& name : kept) write_file(dir.file(name), pattern(10));
  write_file(dir.file(gone), pattern(10));
  EXPECT_EQ(FileSystem::local().remove_stale_temporaries(dir.path().string()), 1u);
  std::vector<std::string> want = kept;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(test::list_dir(dir.path()), want);
  EXPECT_EQ(FileSystem::local().remove_stale_temporaries(dir.file("missing")), 0u);  // no directory: nothing
}

}  // namespace file_test
}  // namespace
}  // namespace agld
