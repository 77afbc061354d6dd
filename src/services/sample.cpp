// The sampler's services (as cmdstan's): sample(), resume_sample(), resolve_sample() and
// read_checkpoint_info(), the public entry points of include/agld/sample.hpp and
// include/agld/checkpoint.hpp. They resolve a run against its stores, make its parts (model,
// preconditioner, Rao-Blackwell accumulators, memory plan) and hand them to the engine
// (sampler/engine.hpp), and wire its checkpoints to the persistence layer (src/output/): the
// one place where the sampler and the checkpoint's format meet.
#include "agld/checkpoint.hpp"
#include "agld/sample.hpp"
#include "model/model.hpp"
#include "output/checkpoint.hpp"
#include "sampler/engine.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/run_plan.hpp"

namespace agld {
namespace {

// A checkpoint file (output/checkpoint_io.hpp): the run's identity (the options as given, the
// resolved run, the stores; output/checkpoint.hpp), then the engine's state.
sampler::CheckpointWriter checkpoint_writer(const SampleOptions& given, const ResolvedSample& run, const Store& train,
                                            const Store* test) {
  return [given, run, &train, test](WritableFile& file, uint64_t iteration,
                                    const std::function<void(StateWriter&)>& state) {
    checkpoint::CheckpointOut out(file);
    checkpoint::save_run(out, given, run, train, test, iteration);
    state(out);
    return out.finish();
  };
}

// The run of plan: its model and Rao-Blackwell accumulators made, the engine wired to the
// checkpoint's format; resume: the checkpoint's state (read past its run section), or null.
Status run_plan(const Store& train, const Store* test, const SampleOptions& given, sampler::RunPlan plan,
                SampleObserver& observer, SampleResult* out, StateReader* resume) {
  auto model = model::find_model(plan.run.given.model)->make(plan.run.given);
  std::unique_ptr<sampler::RaoBlackwell> rb;
  Status st = sampler::make_rao_blackwell(train, plan.run, *model, &rb);
  if (!st.is_ok()) return st;
  sampler::CheckpointWriter writer = checkpoint_writer(given, plan.run, train, test);
  sampler::Engine engine(train, test, std::move(plan), std::move(model), std::move(rb), std::move(writer));
  return engine.run(observer, out, resume);
}

}  // namespace

Status resolve_sample(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* out) {
  sampler::RunPlan plan;
  Status st = sampler::make_run_plan(train, test, options, false, &plan);
  if (!st.is_ok()) return st;
  *out = std::move(plan.run);
  return Status::ok();
}

Status sample(const Store& train, const Store* test, const SampleOptions& options, SampleObserver& observer,
              SampleResult* out) {
  sampler::RunPlan plan;
  Status st = sampler::make_run_plan(train, test, options, true, &plan);
  if (!st.is_ok()) return st;
  return run_plan(train, test, options, std::move(plan), observer, out, nullptr);
}

Status resume_sample(const Store& train, const Store* test, const SampleOptions& options, const ReadableFile& checkpoint,
                     SampleObserver& observer, SampleResult* out) {
  checkpoint::CheckpointIn in;
  Status st = checkpoint::CheckpointIn::open(checkpoint, &in);
  checkpoint::RunSection saved;
  if (st.is_ok()) st = checkpoint::load_run(in, &saved);
  if (!st.is_ok()) return st;
  sampler::RunPlan plan;
  st = sampler::make_run_plan(train, test, options, true, &plan);
  if (!st.is_ok()) return st;
  // What differs between the run and its checkpoint (agld's version, a store, an option) names the checkpoint.
  st = checkpoint::check_run(saved, train, test, &plan.run);
  if (!st.is_ok()) return st.with_context(checkpoint.path());
  return run_plan(train, test, options, std::move(plan), observer, out, &in);
}

Status read_checkpoint_info(const ReadableFile& checkpoint, CheckpointInfo* out) {
  checkpoint::CheckpointIn in;
  checkpoint::RunSection saved;
  Status st = checkpoint::CheckpointIn::open(checkpoint, &in);
  if (st.is_ok()) st = checkpoint::load_run(in, &saved);
  if (!st.is_ok()) return st;
  *out = std::move(saved.info);
  return Status::ok();
}

}  // namespace agld
