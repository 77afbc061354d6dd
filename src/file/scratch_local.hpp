// The local FileSystem's scratch files (FileSystem::create_scratch): an O_TMPFILE in the
// directory, which never has a name, or where the file system has none a file made by
// mkostemp and unlinked at once (only a kill between the two calls leaves it behind).
#pragma once

#include <memory>
#include <string>

#include "agld/file.hpp"

namespace agld {

Status create_local_scratch(const std::string& dir, std::unique_ptr<ScratchFile>* out);

}  // namespace agld
