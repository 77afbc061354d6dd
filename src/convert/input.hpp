// TextInput: a LIBSVM source to read bytes from. A plain file, a file compressed with
// gzip, bzip2, xz or zstd (recognised by its magic bytes, whatever its name), or "-" for
// stdin (compressed or not), read through a FileSystem's open_input (so that tests inject
// read errors). Decompression goes through Boost.Iostreams filters.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

class TextInput {
 public:
  virtual ~TextInput() = default;
  // Opens name ("-" for stdin, on the local file system) through fs.open_input.
  static Status open(const std::string& name, std::unique_ptr<TextInput>* out,
                     FileSystem& fs = FileSystem::local());

  // Reads up to n bytes of text; *got = 0 at the end.
  virtual Status read(char* buf, size_t n, size_t* got) = 0;
  // Bytes of the underlying file consumed so far (compressed bytes for compressed input).
  virtual uint64_t source_bytes_read() const = 0;
  // "gzip", "bzip2", "xz", "zstd" or "plain".
  virtual const char* compression() const = 0;
  // Whether pread() works: a plain regular file, whose bytes can be read at any offset and
  // from any thread (then info().size is its size).
  virtual bool positional() const { return false; }
  // Reads up to n bytes at offset (positional inputs only); *got = 0 at the end. Thread-safe.
  virtual Status pread(uint64_t offset, char* buf, size_t n, size_t* got) const {
    (void)offset, (void)buf, (void)n, (void)got;
    return Status::internal("pread on a stream input");
  }
  const SourceInfo& info() const { return info_; }

 protected:
  SourceInfo info_;
};

}  // namespace agld
