#include "output/checkpoint.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "agld/version.hpp"
#include "store/crc32c.hpp"
#include "common/json_get.hpp"

namespace agld::checkpoint {
namespace {

using Json = nlohmann::json;

// Numbers go through JSON as their shortest round-trip text; an infinite prior as "inf".
Json number(double v) { return std::isinf(v) ? Json("inf") : Json(v); }
template <typename T>
Json maybe(const std::optional<T>& v) { return v ? Json(*v) : Json(); }

Json options_json(const SampleOptions& o) {
  return {{"model", o.model},
          {"noise_var", o.noise_var},
          {"prior_var", number(o.prior_var)},
          {"intercept", o.intercept},
          {"method", maybe(o.method)},
          {"chains", o.chains},
          {"chain_id", o.chain_id},
          {"share_batches", o.share_batches},
          {"threads", o.threads},
          {"step", maybe(o.step)},
          {"friction", maybe(o.friction)},
          {"precondition", o.precondition},
          {"metric", o.metric},
          {"init", o.init},
          {"rao_blackwell", o.rao_blackwell},
          {"batch", maybe(o.batch)},
          {"epochs", maybe(o.epochs)},
          {"iterations", maybe(o.iterations)},
          {"burn_in", maybe(o.burn_in)},
          {"thin", maybe(o.thin)},
          {"refresh", maybe(o.refresh)},
          {"snapshot_batch", maybe(o.snapshot_batch)},
          {"time_limit", maybe(o.time_limit)},
          {"evaluations", o.evaluations},
          {"memory", o.memory},
          {"seed", o.seed},
          {"track", o.track},
          {"track_default", o.track_default},
          {"dense", o.dense}};
}

template <typename T>
void get_opt(const Json& j, const char* key, std::optional<T>* out) {
  const Json& v = j.at(key);
  if (v.is_null()) {
    out->reset();
  } else {
    *out = json_get<T>(v, key);
  }
}

double get_number(const Json& v) {
  if (v.is_string() && json_get<std::string>(v) == "inf") return INFINITY;
  return json_get<double>(v);
}

// Throws nlohmann's exceptions on a missing key or a wrong type (the caller catches them).
SampleOptions options_from_json(const Json& j) {
  SampleOptions o;
  o.model = json_at<std::string>(j, "model");
  o.noise_var = json_at<double>(j, "noise_var");
  o.prior_var = get_number(j.at("prior_var"));
  o.intercept = json_at<bool>(j, "intercept");
  get_opt(j, "method", &o.method);
  o.chains = json_at<uint64_t>(j, "chains");
  o.chain_id = json_at<uint64_t>(j, "chain_id");
  o.share_batches = json_at<bool>(j, "share_batches");
  o.threads = json_at<unsigned>(j, "threads");
  get_opt(j, "step", &o.step);
  o.precondition = json_at<std::string>(j, "precondition");
  // Options added after the format's first checkpoints: absent means not given.
  o.metric = j.value("metric", std::string());
  o.init = j.value("init", std::string());
  o.rao_blackwell = j.value("rao_blackwell", std::string("auto"));
  if (j.contains("friction")) get_opt(j, "friction", &o.friction);
  get_opt(j, "batch", &o.batch);
  get_opt(j, "epochs", &o.epochs);
  get_opt(j, "iterations", &o.iterations);
  get_opt(j, "burn_in", &o.burn_in);
  get_opt(j, "thin", &o.thin);
  get_opt(j, "refresh", &o.refresh);
  get_opt(j, "snapshot_batch", &o.snapshot_batch);
  get_opt(j, "time_limit", &o.time_limit);
  o.evaluations = json_at<uint64_t>(j, "evaluations");
  o.memory = json_at<uint64_t>(j, "memory");
  o.seed = json_at<uint64_t>(j, "seed");
  o.track = json_at<std::vector<uint64_t>>(j, "track");
  o.track_default = json_at<bool>(j, "track_default");
  o.dense = json_at<bool>(j, "dense");
  return o;
}

// The figures that depend on the process's memory when the run started: kept from the checkpoint.
constexpr const char* kMemoryFields[] = {"chain_bytes", "state_bytes", "reader_bytes", "diagnosed", "diagnosed_rule"};
// Options that do not change the draws: a resumed run may set them anew.
constexpr const char* kFreeOptions[] = {"threads", "time_limit"};

Json resolved_json(const ResolvedSample& r) {
  return {{"options", options_json(r.options)},
          {"snapshot", r.snapshot},
          {"access", r.access},
          {"dynamics", r.dynamics},
          {"rows", r.rows},
          {"dim", r.dim},
          {"step", r.step},
          {"friction", r.friction},
          {"friction_rule", r.friction_rule},
          {"batch", r.batch},
          {"iterations", r.iterations},
          {"burn_in", r.burn_in},
          {"thin", r.thin},
          {"refresh", r.refresh},
          {"snapshot_batch", r.snapshot_batch},
          {"eval_every", r.eval_every},
          {"draws", r.draws},
          {"chain_bytes", r.chain_bytes},
          {"state_bytes", r.state_bytes},
          {"reader_bytes", r.reader_bytes},
          {"step_rule", r.step_rule},
          {"precondition_levels", r.precondition_levels},
          {"precondition_m_min", r.precondition_m_min},
          {"precondition_m_max", r.precondition_m_max},
          {"precondition_lambda", r.precondition_lambda},
          {"precondition_kick", r.precondition_kick},
          {"setup_rows", r.setup_rows},
          {"rao_blackwell", r.rao_blackwell},
          {"length_rule", r.length_rule},
          {"own_streams", r.own_streams},
          {"diagnosed", r.diagnosed},
          {"diagnosed_rule", r.diagnosed_rule},
          {"warnings", r.warnings}};
}

Status parse(const std::string& text, const std::string& what, CheckpointIn& in, Json* out) {
  try {
    *out = Json::parse(text);
  } catch (const Json::exception& e) {
    return in.corrupt(what + " is not valid JSON: " + e.what());
  }
  return Status::ok();
}

}  // namespace

std::string store_identity(const Store& s) {
  uint32_t crc = 0;
  for (size_t k = 0; k < s.chunk_count(); ++k) {
    const ChunkInfo& c = s.chunk(k);
    const uint64_t fields[] = {c.offset, c.first_row, c.stored_size, c.raw_size, c.row_count, c.nnz, c.crc};
    crc = crc32c::extend(crc, fields, sizeof fields);
  }
  const StoreMeta& m = s.meta();
  return Json{{"path", s.path()},  {"file_size", s.file_size()}, {"rows", m.rows},
              {"features", m.features}, {"nnz", m.nnz},         {"chunks", s.chunk_count()},
              {"chunk_index_crc32c", crc}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

void save_run(CheckpointOut& out, const SampleOptions& given, const ResolvedSample& run, const Store& train,
              const Store* test, uint64_t iteration) {
  out.u32(tag("RUN "));
  out.str(kVersion);
  out.str(options_json(given).dump(-1, ' ', false, Json::error_handler_t::replace));
  out.str(train.path());
  out.str(test ? test->path() : std::string());
  out.str(store_identity(train));
  out.str(test ? store_identity(*test) : std::string());
  out.str(resolved_json(run).dump(-1, ' ', false, Json::error_handler_t::replace));
  out.u64(iteration);
}

Status load_run(CheckpointIn& in, RunSection* out) {
  AGLD_RETURN_IF_ERROR(in.expect(tag("RUN "), "the run"));
  CheckpointInfo& info = out->info;
  std::string options;
  AGLD_RETURN_IF_ERROR(in.str(&info.agld_version, 256));
  AGLD_RETURN_IF_ERROR(in.str(&options));
  AGLD_RETURN_IF_ERROR(in.str(&info.train, 1 << 16));
  AGLD_RETURN_IF_ERROR(in.str(&info.test, 1 << 16));
  AGLD_RETURN_IF_ERROR(in.str(&out->train_id));
  AGLD_RETURN_IF_ERROR(in.str(&out->test_id));
  AGLD_RETURN_IF_ERROR(in.str(&out->resolved));
  AGLD_RETURN_IF_ERROR(in.u64(&info.iteration));
  Json j;
  AGLD_RETURN_IF_ERROR(parse(options, "the run's options", in, &j));
  try {
    info.options = options_from_json(j);
  } catch (const Json::exception& e) {
    return in.corrupt(std::string("the run's options: ") + e.what());
  }
  return Status::ok();
}

Status check_run(const RunSection& saved, const Store& train, const Store* test, ResolvedSample* now) {
  const std::string where = "the checkpoint's run";
  if (saved.info.agld_version != kVersion) {
    return Status::not_supported("the checkpoint was written by agld " + saved.info.agld_version + ", this is agld " +
                                 kVersion + ": resume with the agld that started the run");
  }
  // The stores: by content (their paths may have changed).
  auto same_store = [](const std::string& saved_id, const Store* s, const std::string& name) -> Status {
    if (saved_id.empty() != (s == nullptr)) {
      return Status::invalid_argument("the run was started " + std::string(s ? "without" : "with") + " a " + name +
                                      " store");
    }
    if (!s) return Status::ok();
    Json a, b = Json::parse(store_identity(*s));
    try {
      a = Json::parse(saved_id);
    } catch (const Json::exception&) {
      return Status::corruption("the checkpoint's " + name + " store identity is not valid JSON");
    }
    a.erase("path");
    b.erase("path");
    if (a != b) {
      return Status::invalid_argument(s->path() + " is not the " + name + " store the run started with (it was " +
                                      saved_id + "; this one is " + store_identity(*s) + ")");
    }
    return Status::ok();
  };
  AGLD_RETURN_IF_ERROR(same_store(saved.train_id, &train, "training"));
  AGLD_RETURN_IF_ERROR(same_store(saved.test_id, test, "test"));
  Json a;
  try {
    a = Json::parse(saved.resolved);
  } catch (const Json::exception&) {
    return Status::corruption(where + " is not valid JSON");
  }
  if (!a.is_object() || !a.contains("options") || !a["options"].is_object()) {
    return Status::corruption(where + " is not a resolved run");
  }
  Json b = resolved_json(*now);
  Json memory;
  for (const char* f : kMemoryFields) {
    if (!a.contains(f)) return Status::corruption(where + " has no " + f);
    memory[f] = a[f];
    a.erase(f);
    b.erase(f);
  }
  for (const char* f : kFreeOptions) {
    if (a.contains("options")) a["options"].erase(f);
    b["options"].erase(f);
  }
  // A round trip through text, so that both sides compare as parsed numbers.
  b = Json::parse(b.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (a != b) {
    std::string diff;
    auto first_difference = [&diff](const Json& x, const Json& y, const std::string& prefix) {
      for (auto it = y.begin(); it != y.end() && diff.empty(); ++it) {
        if (!x.contains(it.key()) || x[it.key()] != it.value()) {
          diff = prefix + it.key() + " was " + (x.contains(it.key()) ? x[it.key()].dump() : "absent") + ", now " +
                 it.value().dump();
        }
      }
    };
    if (a.contains("options") && a["options"] != b["options"]) first_difference(a["options"], b["options"], "option ");
    if (diff.empty()) first_difference(a, b, "");
    return Status::invalid_argument("the run would not continue as it started: " + diff);
  }
  try {
    now->chain_bytes = json_get<uint64_t>(memory["chain_bytes"], "chain_bytes");
    now->state_bytes = json_get<uint64_t>(memory["state_bytes"], "state_bytes");
    now->reader_bytes = json_get<uint64_t>(memory["reader_bytes"], "reader_bytes");
    now->diagnosed = json_get<uint64_t>(memory["diagnosed"], "diagnosed");
    now->diagnosed_rule = json_get<std::string>(memory["diagnosed_rule"], "diagnosed_rule");
  } catch (const Json::exception& e) {
    return Status::corruption(where + ": " + e.what());
  }
  return Status::ok();
}

}  // namespace agld::checkpoint
