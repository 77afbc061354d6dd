// make_run_plan (sampler/run_plan.hpp): the resolution of a run, in order: the options and
// the store's statistics (resolve_options), --init's file, the preconditioner (which sets
// ld's step under diag), the dynamics' step and friction, the Rao-Blackwellized moments, the
// unseen directions, the gradient noise's correction, and the memory plan.
#include "sampler/run_plan.hpp"

#include "model/model.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/gradient_noise.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/snapshot.hpp"
#include "sampler/unseen_move.hpp"

namespace agld::sampler {

Status make_run_plan(const Store& train, const Store* test, const SampleOptions& given, bool build_preconditioner,
                     RunPlan* out) {
  RunPlan p;
  ResolvedSample* r = &p.run;
  Status st = resolve_options(train, test, given, r);
  if (!st.is_ok()) return st;
  if (!given.init.empty()) {  // before any output: a bad --init is a usage error, not a failed run
    std::unique_ptr<CoordinateFile> init;
    st = CoordinateFile::open("--init", given.init, r->dim, 1, &init);
    if (st.is_ok()) st = init->check_column(0, false);
    if (st.is_ok() && init->cols() > 1) st = init->check_column(1, true);
    if (!st.is_ok()) return st;
  }
  auto model = model::find_model(given.model)->make(given);
  if (build_preconditioner && given.precondition == "diag") {
    st = make_preconditioner(train, *model, given.step.has_value(), true, r, &p.pre);
    if (!st.is_ok()) return st;
  }
  st = resolve_dynamics(given, r);
  if (!st.is_ok()) return st;
  const auto snap = find_snapshot(r->snapshot)->make({r->rows, r->dim, r->refresh, r->snapshot_batch, model.get()});
  st = resolve_rao_blackwell(train, *model, *snap, r);
  if (st.is_ok()) st = resolve_unseen(train, r);
  if (st.is_ok()) st = resolve_noise_correction(r);
  if (!st.is_ok()) return st;
  st = plan_memory(train, test, r, *snap, &p.memory);
  if (!st.is_ok()) return st;
  *out = std::move(p);
  return Status::ok();
}

}  // namespace agld::sampler
