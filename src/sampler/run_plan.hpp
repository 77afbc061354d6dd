// A run's plan: everything `agld sample` settles before its first iteration, resolved once, by
// make_run_plan(), from the options as given and the stores. The resolved run (every default
// and the rule that chose it: resolve.cpp, preconditioner.cpp, rao_blackwell.cpp), its memory
// plan (memory_plan.cpp) and its preconditioner. The engine takes it whole and keeps it fixed;
// a resume first takes from its checkpoint the figures that depended on the process's memory
// when the run started (output/checkpoint.hpp, check_run). Internal to the sampler layer.
#pragma once

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "sampler/plan.hpp"
#include "sampler/preconditioner.hpp"

namespace agld::sampler {

struct RunPlan {
  ResolvedSample run;
  MemoryPlan memory;
  Preconditioner pre;  // empty unless built (diag, and asked for)
};

// build_preconditioner: read the store's sample for diag's M and its step (sample()); false
// resolves without reading the data (resolve_sample(), which checks the options).
Status make_run_plan(const Store& train, const Store* test, const SampleOptions& given, bool build_preconditioner,
                     RunPlan* out);

}  // namespace agld::sampler
