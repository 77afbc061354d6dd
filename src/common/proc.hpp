// Facts about this process that the memory budget needs.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace agld {

// The resident set size now (/proc/self/statm), 0 when unknown.
inline uint64_t process_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace agld
