// Checkpoints of a run of `agld sample`, and resuming from one (docs/reliability.md,
// "Checkpoints"). A run saves its whole state when its observer asks
// (SampleObserver::checkpoint_due), at an iteration where every chain is already current;
// resume_sample() continues it, and the draws, the metrics and the posterior are those of
// the run had it never stopped.
#pragma once

#include <cstdint>
#include <string>

#include "agld/file.hpp"
#include "agld/sample.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

// What a checkpoint says about its run.
struct CheckpointInfo {
  std::string agld_version;  // of the build that wrote it
  SampleOptions options;     // as the run was started
  std::string train, test;   // the stores' paths as the run opened them (test: "" if none)
  uint64_t iteration = 0;    // the iteration the run continues from
};

// Checks the checkpoint (header, format version, trailer, CRC) and reads its run's identity.
// Anything wrong is one Status (corruption, not_supported), never a crash.
Status read_checkpoint_info(const ReadableFile& checkpoint, CheckpointInfo* out);

// Continues the run saved in checkpoint. The stores must be those the run started with (by
// content: size, shape and every chunk's CRC), the options its options (threads and
// time_limit may differ: they do not change the draws), and the build's agld version the
// one that wrote it. The observer first gets on_start, then the draws and evaluations the
// run had made before the checkpoint (replayed, in order), then the rest as they come.
Status resume_sample(const Store& train, const Store* test, const SampleOptions& options,
                     const ReadableFile& checkpoint, SampleObserver& observer, SampleResult* out);

}  // namespace agld
