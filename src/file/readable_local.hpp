// The local FileSystem's readable files (FileSystem::open_readable): Boost.Iostreams memory
// maps, guarded against the file shrinking under them (mapping_guard.hpp), with reads past the
// page cache (O_DIRECT where the file system allows it) and page-cache hints.
#pragma once

#include <memory>
#include <string>

#include "agld/file.hpp"

namespace agld {

Status open_local_readable(const std::string& path, std::unique_ptr<ReadableFile>* out);

}  // namespace agld
