// A fault-injecting FileSystem for tests. It wraps another FileSystem (by default the local
// one) and, as configured:
//   reads:  serves every file from a private copy of its bytes, with chosen bytes flipped
//           (XOR-ed with a mask) and/or cut to a shorter length, and/or fails the views that
//           reach a chosen offset;
//   inputs: (open_input) fails the read that reaches a chosen offset;
//   writes: fails append() with "No space left on device" once more than a budget of bytes
//           would have been written (shared by all files written through it, scratch files
//           included, like a disk), and/or fails the n-th commit().
// Files that fail are never committed, so the wrapped implementation discards them; tests
// check that by listing the directory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"

namespace agld::test {

class FaultFileSystem final : public FileSystem {
 public:
  struct Flip {
    uint64_t offset = 0;
    uint8_t mask = 0xFF;
  };

  explicit FaultFileSystem(FileSystem& base = FileSystem::local()) : base_(base) {}

  // --- read faults (apply to files opened afterwards) ---
  std::vector<Flip> flips;
  std::optional<uint64_t> truncate_to;  // serve at most this many bytes
  // A view that reaches this offset fails with "Input/output error", as a bad sector would.
  std::optional<uint64_t> read_error_at;

  // Inputs (open_input): a read that reaches this offset fails with "Input/output error",
  // as a bad sector or a dropped network mount would.
  std::optional<uint64_t> input_error_at;

  // --- write faults ---
  std::optional<uint64_t> space;             // bytes that fit on the "disk"
  std::optional<uint64_t> fail_commit_at;    // 0-based index of the commit() call to fail

  // --- what happened ---
  uint64_t bytes_written() const { return written_; }  // accepted bytes, all files
  uint64_t commits_attempted() const { return commits_; }
  uint64_t faults_injected() const { return faults_; }
  uint64_t files_created() const { return created_; }    // create_atomic()
  uint64_t scratch_created() const { return scratch_; }  // create_scratch()

  void reset_counters() { written_ = commits_ = faults_ = created_ = scratch_ = 0; }

  // Every file created, append and commit in order, with the bytes written before it (all
  // files): where to set `space` for a write to fail at a chosen moment of a rerun. A scratch
  // file's are named "scratch in DIR".
  struct Event {
    enum Kind { kCreate, kAppend, kCommit } kind;
    std::string path;
    uint64_t written_before;
  };
  std::vector<Event> events;

  Status open_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) override {
    std::unique_ptr<ReadableFile> inner;
    AGLD_RETURN_IF_ERROR(base_.open_readable(path, &inner));
    ByteSpan all;
    AGLD_RETURN_IF_ERROR(inner->view(0, static_cast<size_t>(inner->size()), &all));
    std::vector<std::byte> bytes(all.begin(), all.end());
    if (truncate_to && *truncate_to < bytes.size()) bytes.resize(static_cast<size_t>(*truncate_to));
    for (const Flip& f : flips) {
      if (f.offset < bytes.size()) bytes[static_cast<size_t>(f.offset)] ^= std::byte{f.mask};
    }
    *out = std::make_unique<CopyFile>(this, path, std::move(bytes));
    return Status::ok();
  }

  Status open_input(const std::string& path, std::unique_ptr<InputFile>* out) override {
    std::unique_ptr<InputFile> inner;
    AGLD_RETURN_IF_ERROR(base_.open_input(path, &inner));
    if (!input_error_at) {
      *out = std::move(inner);
      return Status::ok();
    }
    *out = std::make_unique<FaultInputFile>(this, std::move(inner), *input_error_at);
    return Status::ok();
  }

  Status create_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    std::unique_ptr<WritableFile> inner;
    AGLD_RETURN_IF_ERROR(base_.create_atomic(path, &inner));
    ++created_;
    events.push_back({Event::kCreate, path, written_});
    *out = std::make_unique<FaultWritableFile>(this, std::move(inner));
    return Status::ok();
  }

  Status create_scratch(const std::string& dir, std::unique_ptr<ScratchFile>* out) override {
    std::unique_ptr<ScratchFile> inner;
    AGLD_RETURN_IF_ERROR(base_.create_scratch(dir, &inner));
    ++scratch_;
    events.push_back({Event::kCreate, "scratch in " + dir, written_});
    *out = std::make_unique<FaultScratchFile>(this, std::move(inner), "scratch in " + dir);
    return Status::ok();
  }

 private:
  // A read-only file served from memory.
  class CopyFile final : public ReadableFile {
   public:
    CopyFile(FaultFileSystem* fs, std::string path, std::vector<std::byte> bytes)
        : fs_(fs), path_(std::move(path)), bytes_(std::move(bytes)), error_at_(fs->read_error_at) {}
    const std::string& path() const override { return path_; }
    uint64_t size() const override { return bytes_.size(); }
    Status view(uint64_t offset, size_t n, ByteSpan* out) const override {
      if (offset > bytes_.size() || n > bytes_.size() - offset) {
        return Status::corruption(path_ + ": read of " + std::to_string(n) + " bytes at offset " +
                                  std::to_string(offset) + " is past the end of the file (" +
                                  std::to_string(bytes_.size()) + " bytes); the file is truncated");
      }
      if (error_at_ && n > 0 && offset + n > *error_at_) {
        ++fs_->faults_;
        return Status::io_error(path_ + ": read failed: Input/output error");
      }
      *out = ByteSpan(bytes_.data() + offset, n);
      return Status::ok();
    }

   private:
    FaultFileSystem* fs_;
    std::string path_;
    std::vector<std::byte> bytes_;
    std::optional<uint64_t> error_at_;
  };

  // An input whose bytes from error_at on cannot be read: what comes before is served.
  class FaultInputFile final : public InputFile {
   public:
    FaultInputFile(FaultFileSystem* fs, std::unique_ptr<InputFile> inner, uint64_t error_at)
        : fs_(fs), inner_(std::move(inner)), error_at_(error_at) {}
    const std::string& path() const override { return inner_->path(); }
    std::optional<uint64_t> size() const override { return inner_->size(); }
    std::optional<int64_t> mtime() const override { return inner_->mtime(); }
    Status read(char* buf, size_t n, size_t* got) override {
      AGLD_RETURN_IF_ERROR(serve(at_, &n));
      AGLD_RETURN_IF_ERROR(inner_->read(buf, n, got));
      at_ += *got;
      return Status::ok();
    }
    Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
      AGLD_RETURN_IF_ERROR(serve(offset, &n));
      return inner_->pread(offset, buf, n, got);
    }

   private:
    // A read at offset: cut to end before error_at, or failed if it starts there.
    Status serve(uint64_t offset, size_t* n) const {
      if (*n > 0 && offset >= error_at_) {
        ++fs_->faults_;
        return Status::io_error(path() + ": read failed: Input/output error");
      }
      if (*n > 0) *n = static_cast<size_t>(std::min<uint64_t>(*n, error_at_ - offset));
      return Status::ok();
    }
    FaultFileSystem* fs_;
    std::unique_ptr<InputFile> inner_;
    uint64_t error_at_;
    uint64_t at_ = 0;
  };

  class FaultWritableFile final : public WritableFile {
   public:
    FaultWritableFile(FaultFileSystem* fs, std::unique_ptr<WritableFile> inner)
        : fs_(fs), inner_(std::move(inner)) {}
    const std::string& path() const override { return inner_->path(); }
    uint64_t size() const override { return inner_->size(); }

    Status append(ByteSpan data) override {
      return fs_->append_within_space(*inner_, path(), data, path() + ": write failed: ");
    }

    Status commit() override {
      fs_->events.push_back({Event::kCommit, path(), fs_->written_});
      const uint64_t n = fs_->commits_++;
      if (fs_->fail_commit_at && *fs_->fail_commit_at == n) {
        ++fs_->faults_;
        return Status::io_error(path() + ": fsync failed: Input/output error");
      }
      return inner_->commit();
    }

   private:
    FaultFileSystem* fs_;
    std::unique_ptr<WritableFile> inner_;
  };

  // A scratch file on the same "disk": its appends count against `space`; its errors are the
  // system's text alone, as the local one's.
  class FaultScratchFile final : public ScratchFile {
   public:
    FaultScratchFile(FaultFileSystem* fs, std::unique_ptr<ScratchFile> inner, std::string name)
        : fs_(fs), inner_(std::move(inner)), name_(std::move(name)) {}
    Status append(ByteSpan data) override {
      return fs_->append_within_space(*inner_, name_, data, "");
    }
    Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const override {
      return inner_->pread(offset, buf, n, got);
    }
    bool discard(uint64_t offset, uint64_t n) override { return inner_->discard(offset, n); }

   private:
    FaultFileSystem* fs_;
    std::unique_ptr<ScratchFile> inner_;
    std::string name_;
  };

  // Appends data to inner, a file of this "disk" (path names it in the events): like a real
  // full disk, what fits is written, then the write fails with prefix + "No space left on
  // device".
  template <typename File>
  Status append_within_space(File& inner, const std::string& path, ByteSpan data,
                             const std::string& prefix) {
    events.push_back({Event::kAppend, path, written_});
    if (space) {
      const uint64_t left = *space > written_ ? *space - written_ : 0;
      if (data.size() > left) {
        if (left > 0) {
          AGLD_RETURN_IF_ERROR(inner.append(data.first(static_cast<size_t>(left))));
          written_ += left;
        }
        ++faults_;
        return Status::io_error(prefix + "No space left on device");
      }
    }
    AGLD_RETURN_IF_ERROR(inner.append(data));
    written_ += data.size();
    return Status::ok();
  }

  FileSystem& base_;
  uint64_t written_ = 0;
  uint64_t commits_ = 0;
  uint64_t faults_ = 0;
  uint64_t created_ = 0;
  uint64_t scratch_ = 0;
};

}  // namespace agld::test
