// The file-access interface. Every file agld reads or writes goes through it (stores,
// inputs, run directories, gen's output, the shuffle's temporary runs, --init and --metric
// files), so that tests can inject faults (flipped bytes, short files, full disks) and the
// memory budget has one place to live. The default implementation memory-maps files for
// reading (Boost.Iostreams), reads inputs (convert's LIBSVM text, stdin) with read(2), writes
// through an unnamed temporary file that is linked into place on commit, and keeps scratch
// files unnamed (O_TMPFILE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "agld/status.hpp"

namespace agld {

using ByteSpan = std::span<const std::byte>;

// Memory for ReadableFile::read_uncached: page-aligned (reads that bypass the page cache
// need it), growing to the largest read. Owned by the reading thread and reused.
class ReadBuffer {
 public:
  static constexpr size_t kAlign = 4096;
  ReadBuffer() = default;
  ReadBuffer(ReadBuffer&& other) noexcept : data_(other.data_), capacity_(other.capacity_) {
    other.data_ = nullptr;
    other.capacity_ = 0;
  }
  ReadBuffer& operator=(ReadBuffer&& other) noexcept;
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  ~ReadBuffer();
  // At least n bytes (the contents are not kept when it grows). Throws std::bad_alloc.
  std::byte* reserve(size_t n);
  size_t capacity() const { return capacity_; }

 private:
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
};

// A read-only file whose bytes can be viewed in place.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  // Views n bytes at offset. The view stays valid while the file is open. Fails, rather
  // than touching memory outside the file, when [offset, offset + n) is not in the file.
  virtual Status view(uint64_t offset, size_t n, ByteSpan* out) const = 0;
  // A hint that [offset, offset + n) will not be needed soon (page cache may drop it).
  virtual void drop_cache(uint64_t offset, size_t n) const { (void)offset, (void)n; }
  // A hint that [offset, offset + n) is about to be read: the kernel reads exactly those
  // pages, so that faults in the mapping do not read around themselves (read-ahead would
  // otherwise bring in pages of neighbouring chunks and break the reader's memory budget).
  virtual void will_need(uint64_t offset, size_t n) const { (void)offset, (void)n; }
  // A hint that the file will be read in an order the kernel cannot guess: no read-ahead
  // around faults or reads, so that only the pages asked for (will_need) are brought in.
  virtual void advise_random() const {}
  // Reads n bytes at offset once, for a caller that keeps no page of them: *out views the
  // bytes, in buf (the page cache and this process's mapping are left as they were, or
  // without those pages). The local file system reads with O_DIRECT where the file system
  // allows it, so the bytes never enter the page cache (on the development VM a buffered
  // read of a store cost 10x the CPU of an O_DIRECT one, docs/readers.md); elsewhere it
  // reads through the page cache and drops the pages. The default copies from view() and
  // then drops the range. Fails as view() does for a range outside the file.
  virtual Status read_uncached(uint64_t offset, size_t n, ReadBuffer* buf, ByteSpan* out) const;
  // Whether the file is still the one opened: an error naming the file if it has changed
  // since (a store truncated or rewritten while a run reads it), so that what was just read
  // from it is not used. The local file system compares the size and the modification time
  // of its open descriptor (fstat) with those at open, and reports a read of the mapping that
  // fell past a new end (it read zeros then, rather than dying of SIGBUS: mapping_guard.hpp).
  // Cheap: a system call. The default: the file cannot change.
  virtual Status check_unchanged() const { return Status::ok(); }
};

// A file being written. Nothing appears at its path until commit() succeeds; destroying
// it uncommitted discards everything written, leaving no file behind.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual const std::string& path() const = 0;
  virtual Status append(ByteSpan data) = 0;
  virtual uint64_t size() const = 0;
  // Flushes, syncs, and atomically replaces whatever is at path() by this file.
  virtual Status commit() = 0;
};

// A file read front to back, as convert reads its inputs: a regular file, a pipe, or stdin.
// Nothing is mapped (a LIBSVM input may be larger than memory, and a pipe cannot be).
class InputFile {
 public:
  virtual ~InputFile() = default;
  virtual const std::string& path() const = 0;
  // Reads up to n bytes at the current position; *got = 0 at the end. Errors name the file.
  virtual Status read(char* buf, size_t n, size_t* got) = 0;
  // A regular file: its size when opened (then pread works), and its modification time.
  virtual std::optional<uint64_t> size() const = 0;
  virtual std::optional<int64_t> mtime() const { return std::nullopt; }
  // Reads up to n bytes at offset (only when size() is set); *got = 0 at the end. Does not
  // move read()'s position. Thread-safe.
  virtual Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const = 0;
};

// A temporary file written and read back by one process, as the external shuffle spills its
// sorted runs: it has no name (or none past its creation) and is gone when destroyed. Written
// at its end, read anywhere. Errors are the system's text alone ("No space left on device"):
// the file has no name, so the caller says which one it is.
class ScratchFile {
 public:
  virtual ~ScratchFile() = default;
  virtual Status append(ByteSpan data) = 0;
  // Reads up to n bytes at offset; *got = 0 at the end.
  virtual Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const = 0;
  // Frees [offset, offset + n), which will not be read again, where the file system can
  // (the local one punches a hole): whether it did. The default cannot.
  virtual bool discard(uint64_t offset, uint64_t n) { return (void)offset, (void)n, false; }
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual Status open_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) = 0;
  virtual Status create_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  // Opens an input to read front to back. The local file system reads "-" as stdin and any
  // other path with read(2) and pread(2); the default serves open_readable()'s bytes (for
  // file systems held in memory).
  virtual Status open_input(const std::string& path, std::unique_ptr<InputFile>* out);
  // Removes dir's named temporaries ("NAME.tmp.PID.N") whose writing process no longer runs:
  // what a kill -9 leaves on a file system without O_TMPFILE, or in the instant a commit over an
  // existing file has its temporary name. For directories a tool owns (a run directory); the
  // count removed. The default (file systems held in memory) has none.
  virtual size_t remove_stale_temporaries(const std::string& dir);
  // Creates a scratch file in dir. The local file system makes it with O_TMPFILE, or where
  // the file system has none under a name unlinked at once; the default holds its bytes in
  // memory (for file systems held in memory).
  virtual Status create_scratch(const std::string& dir, std::unique_ptr<ScratchFile>* out);
  // The process-wide default: mmap for reading, O_TMPFILE + link for writing.
  static FileSystem& local();
};

// Removes the named temporary files of the local FileSystem's uncommitted writes. They
// exist only on file systems without O_TMPFILE (NFS, for one); elsewhere an uncommitted
// write has no name to remove. Async-signal-safe: meant for the CLI's SIGINT/SIGTERM
// handler, so that an interrupted conversion leaves nothing behind there either.
void remove_pending_temporaries() noexcept;

}  // namespace agld
