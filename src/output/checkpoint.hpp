// The run section of a checkpoint (docs/reliability.md, "Checkpoints"): what identifies the
// run a checkpoint belongs to, written first and checked before any state is read back.
// The engine (src/sampler/engine.cpp) writes the sections of its state after it. Internal
// to the library.
#pragma once

#include <string>

#include "agld/checkpoint.hpp"
#include "output/checkpoint_io.hpp"

namespace agld::checkpoint {

struct RunSection {
  CheckpointInfo info;
  std::string train_id, test_id;  // the stores' identities (JSON text)
  std::string resolved;           // the resolved run (JSON text)
};

// The identity of a store: its size and shape, and a CRC-32C over its chunk index (every
// chunk's size, rows and CRC): what changes when its content does, read without a pass.
std::string store_identity(const Store& s);

// given: the options as the run was given them (a resumed run's: its checkpoint's and those
// given again); run: what they resolved to.
void save_run(CheckpointOut& out, const SampleOptions& given, const ResolvedSample& run, const Store& train,
              const Store* test, uint64_t iteration);
Status load_run(CheckpointIn& in, RunSection* out);

// The run about to resume (`now`, resolved again from the options and the stores) against
// the checkpoint's: the stores must be the same, and so must every resolved figure but
// those that depend on the process's memory when the run started (the memory split and the
// diagnostics' coverage), which are taken from the checkpoint into *now.
Status check_run(const RunSection& saved, const Store& train, const Store* test, ResolvedSample* now);

}  // namespace agld::checkpoint
