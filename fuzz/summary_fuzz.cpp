// Fuzz target: reading a run directory back (agld::summarize_run, what `agld summary DIR`
// does): config.json, every chain's Stan CSV draws, diagnostics.npy and posterior.npy.
// Input: the directory's files, each as a line "@@@ NAME" followed by its bytes, up to a
// newline and the next "@@@ " line (fuzz/corpus/summary/ holds a real run's). The files live in memory
// (fuzz::MemoryFileSystem). Checks: no crash, hang or sanitizer report, and a summary that
// succeeds has a column for lp__ and each tracked coordinate.
#include <cstdint>
#include <string>
#include <string_view>

#include "agld/run_output.hpp"
#include "agld/run_summary.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agld;
  if (size > (1 << 20)) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kMark = "@@@ ";
  fuzz::MemoryFileSystem fs;
  size_t at = in.starts_with(kMark) ? 0 : in.find("\n@@@ ");
  if (at != std::string_view::npos && at > 0) ++at;
  while (at != std::string_view::npos && at < in.size()) {
    const size_t name_end = in.find('\n', at);
    if (name_end == std::string_view::npos) break;
    const std::string name(in.substr(at + kMark.size(), name_end - at - kMark.size()));
    const size_t next = in.find("\n@@@ ", name_end);
    const size_t end = next == std::string_view::npos ? in.size() : next;  // the '\n' separates
    fs.put("run/" + name, std::string(in.substr(name_end + 1, end - name_end - 1)));
    at = next == std::string_view::npos ? next : next + 1;
  }
  RunSummary s;
  const Status st = summarize_run("run", fs, &s);
  if (st.is_ok()) {
    AGLD_FUZZ_CHECK(!s.columns.empty() && s.columns[0].name == "lp__", "lp__ first");
    AGLD_FUZZ_CHECK(s.chains >= 1, "chains");
  } else {
    AGLD_FUZZ_CHECK(!st.message().empty(), "an error says what");
  }
  // The .npy reader on its own, on every file given.
  for (const char* name : {"run/diagnostics.npy", "run/posterior.npy"}) {
    if (const fuzz::Bytes* b = fs.get(name)) {
      NpyView v;
      if (decode_npy_f64(b->span(), &v).is_ok()) {
        AGLD_FUZZ_CHECK(v.data.size() == v.rows * v.cols * 8, "npy data size");
      }
    }
  }
  return 0;
}
