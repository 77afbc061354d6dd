// The build's identity, "VERSION+COMMIT": the project version (CMakeLists.txt) and the git
// commit it was built from ("unknown" for a build from a tree without .git). Defined in a
// source file generated at every build (cmake/agld_version.cmake, from src/version.cpp.in),
// so that a new commit recompiles that file alone. A checkpoint records kVersion, and only
// the same build resumes it: another commit may draw other numbers from the same state
// (docs/reliability.md, "The build's identity").
#pragma once

namespace agld {

extern const char* const kVersion;         // "0.1.0+c77c134d20d3", "-dirty" with changes
extern const char* const kProjectVersion;  // "0.1.0"
extern const char* const kGitCommit;       // "c77c134d20d3", or "unknown"

}  // namespace agld
