#include "output/checkpoint.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "agld/options.hpp"
#include "agld/version.hpp"
#include "store/crc32c.hpp"
#include "common/json_get.hpp"

namespace agld::checkpoint {
namespace {

using Json = nlohmann::json;

Json options_of(const SampleOptions& o) { return Json::parse(options_json(o)); }

// The figures that depend on the process's memory when the run started: kept from the checkpoint.
constexpr const char* kMemoryFields[] = {"chain_bytes", "state_bytes", "reader_bytes", "diagnosed", "diagnosed_rule"};

Json resolved_json(const ResolvedSample& r) {
  return {{"options", options_of(r.given)},
          {"method", r.method},
          {"epochs", r.epochs},
          {"track", r.track},
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
          {"metric", r.metric},
          {"metric_block", r.metric_block},
          {"metric_rule", r.metric_rule},
          {"setup_rows", r.setup_rows},
          {"rao_blackwell", r.rao_blackwell},
          {"gibbs", r.gibbs},
          {"length_rule", r.length_rule},
          {"own_streams", r.own_streams},
          {"diagnosed", r.diagnosed},
          {"diagnosed_rule", r.diagnosed_rule},
          {"warnings", r.warnings}};
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
  out.str(options_json(given));
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
  const Status st = options_from_json(options, &info.options);
  if (!st.is_ok()) return in.corrupt("the run's options: " + st.message());
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
  // Options that do not change the draws: a resumed run may set them anew.
  for (const OptionField<SampleOptions>& f : sample_option_fields()) {
    if (!f.resumable) continue;
    a["options"].erase(std::string(f.key));
    b["options"].erase(std::string(f.key));
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
