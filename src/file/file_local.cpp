// The local FileSystem: memory maps for reading (readable_local.hpp), inputs read with
// read(2) (input_local.hpp), for writing an unnamed O_TMPFILE linked into place only on commit
// (writable_local.hpp), and scratch files kept unnamed (scratch_local.hpp).
#include <memory>
#include <string>

#include "agld/file.hpp"
#include "file/input_local.hpp"
#include "file/readable_local.hpp"
#include "file/scratch_local.hpp"
#include "file/writable_local.hpp"

namespace agld {
namespace {

class LocalFileSystem final : public FileSystem {
 public:
  Status open_readable(const std::string& path, std::unique_ptr<ReadableFile>* out) override {
    return open_local_readable(path, out);
  }

  Status open_input(const std::string& path, std::unique_ptr<InputFile>* out) override {
    return open_local_input(path, out);
  }

  Status create_atomic(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return create_local_atomic(path, out);
  }

  size_t remove_stale_temporaries(const std::string& dir) override {
    return remove_stale_local_temporaries(dir);
  }

  Status create_scratch(const std::string& dir, std::unique_ptr<ScratchFile>* out) override {
    return create_local_scratch(dir, out);
  }
};

}  // namespace

FileSystem& FileSystem::local() {
  static LocalFileSystem fs;
  return fs;
}

}  // namespace agld
