// parse_bench FILE [REPS]: the LIBSVM parser alone, on text already in memory, one thread.
// Prints the min and median MB/s over REPS passes (min and median resist a noisy machine).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "convert/libsvm.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: parse_bench FILE [REPS]\n");
    return 64;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  // Blocks of whole lines, about 4 MiB, as the converter cuts them.
  std::vector<std::string_view> blocks;
  for (size_t at = 0; at < text.size();) {
    size_t end = std::min(text.size(), at + (size_t{4} << 20));
    if (end < text.size()) end = text.find('\n', end) + 1;
    blocks.emplace_back(text.data() + at, end - at);
    at = end;
  }
  agld::ParseOptions opt;
  agld::ParsedBlock out;
  std::vector<double> mbs;
  uint64_t rows = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    rows = 0;
    for (std::string_view b : blocks) {
      agld::parse_block(b, 1, opt, &out);
      rows += out.rows.rows();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    mbs.push_back(static_cast<double>(text.size()) / 1e6 / s);
  }
  std::sort(mbs.begin(), mbs.end());
  std::printf("parse: %llu rows, %.0f MB; MB/s max %.0f, median %.0f (%d passes)\n",
              static_cast<unsigned long long>(rows), static_cast<double>(text.size()) / 1e6,
              mbs.back(), mbs[mbs.size() / 2], reps);
}
