// Shared pieces of the agld command line: exit codes, one-line errors, sizes, progress.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agld/status.hpp"

namespace agld {
struct RunSummary;
struct RowsClassSummary;
class Store;
}

namespace agld::cli {

// sysexits(3)
inline constexpr int kExOk = 0;
inline constexpr int kExUsage = 64;
inline constexpr int kExDataErr = 65;
inline constexpr int kExNoInput = 66;
inline constexpr int kExSoftware = 70;
inline constexpr int kExCantCreat = 73;
inline constexpr int kExIOErr = 74;

struct Cli {
  CLI::App app{"agld: out-of-core streaming posterior sampling for generalised linear models",
               "agld"};
  int exit_code = kExOk;
};

int exit_code_for(const Status& s);
// Prints "agld: <message>" as one line on stderr and returns the status's exit code.
int fail(const Status& s);

// "8G", "512M", "100k", "1234" (bytes; K/M/G/T are powers of 1024). Throws CLI::ValidationError.
uint64_t parse_size(const std::string& text);
// "8G" for 8 GiB, "1536M", else bytes: how a size default is shown (parse_size reads it back).
std::string size_text(uint64_t bytes);
// A CLI11 validator for parse_size.
CLI::Validator size_validator();

// While one lives, the first SIGINT or SIGTERM asks the run to stop (requested() turns true:
// the run ends at its next check with complete outputs); a second dies as usual, removing
// unfinished outputs. The handlers before it come back when it goes.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  static bool requested();

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// True when stderr is a terminal (progress lines are drawn only then).
bool stderr_is_tty();
std::string human_bytes(double bytes);
std::string human_duration(double seconds);

// Subcommands. Each lives in its own tools/cmd_*.cpp.
void add_convert(Cli& cli);
void add_info(Cli& cli);
void add_dump(Cli& cli);
void add_gen(Cli& cli);
void add_scan(Cli& cli);
void add_sample(Cli& cli);
void add_optimize(Cli& cli);
void add_summary(Cli& cli);

// The diagonal preconditioner's figures for config.json (null without one), from a resolved
// sample or optimize run: its levels, M's range, lambda, the row kick and the rows it read.
template <typename Resolved>
nlohmann::json preconditioner_json(const std::string& precondition, const Resolved& r) {
  if (precondition != "diag") return nlohmann::json();
  nlohmann::json j = {{"levels", r.precondition_levels},   {"m_min", r.precondition_m_min}, {"m_max", r.precondition_m_max},
                      {"lambda", r.precondition_lambda},   {"row_kick", r.precondition_kick}, {"rows_read", r.setup_rows}};
  if constexpr (requires { r.precondition_visit_lowered; }) j["visit_lowered"] = r.precondition_visit_lowered;
  if constexpr (requires { r.precondition_kick_cap; }) {
    j["kick_cap"] = r.precondition_kick_cap > 0 ? nlohmann::json(r.precondition_kick_cap) : nlohmann::json();
    j["kick_capped"] = r.precondition_kick_capped;
  }
  if constexpr (requires { r.metric_block; }) {
    j["metric"] = r.metric;
    j["metric_block"] = r.metric_block;
    j["metric_rule"] = r.metric_rule;
  }
  return j;
}

// A store's identity for a run's config.json: path, size, shape, labels, sources.
nlohmann::json store_identity(const Store& s);

// v, or null where it is not finite (JSON has no NaN or infinity).
nlohmann::json json_number(double v);

// config.json's diagnostics.by_rows, as `agld summary --json` gives it back.
nlohmann::json by_rows_json(const std::vector<RowsClassSummary>& classes);

// The text of `agld summary` (also printed at the end of `agld sample`).
std::string summary_text(const RunSummary& s);

}  // namespace agld::cli
