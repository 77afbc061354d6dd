// The local FileSystem's inputs (FileSystem::open_input): read(2) and pread(2) on a file
// descriptor, stdin for "-".
#pragma once

#include <memory>
#include <string>

#include "agld/file.hpp"

namespace agld {

Status open_local_input(const std::string& path, std::unique_ptr<InputFile>* out);

}  // namespace agld
