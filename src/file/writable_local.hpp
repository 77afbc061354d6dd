// The local FileSystem's files being written (FileSystem::create_atomic): an unnamed
// O_TMPFILE in the target's directory, linked into place only on commit, so that a failed or
// killed writer leaves nothing behind; where the file system has no O_TMPFILE, a temporary
// named "NAME.tmp.PID.N", removed on failure (and by remove_pending_temporaries() on a
// signal), or later by remove_stale_local_temporaries() when its writer died.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "agld/file.hpp"

namespace agld {

Status create_local_atomic(const std::string& path, std::unique_ptr<WritableFile>* out);

// FileSystem::remove_stale_temporaries for the local file system.
size_t remove_stale_local_temporaries(const std::string& dir);

}  // namespace agld
