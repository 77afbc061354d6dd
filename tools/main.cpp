// agld: the command line. A thin layer over the library's service functions.
#include <csignal>
#include <iostream>

#include "agld/file.hpp"
#include "agld/version.hpp"
#include "cli_common.hpp"

namespace {

// SIGINT, SIGTERM, SIGHUP: remove the named temporaries of unfinished outputs (only file
// systems without O_TMPFILE have any), then die of the signal as if unhandled.
extern "C" void on_terminating_signal(int sig) {
  agld::remove_pending_temporaries();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_signal_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = on_terminating_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  install_signal_cleanup();
  agld::cli::Cli cli;
  cli.app.set_version_flag("--version", std::string("agld ") + agld::kVersion);
  cli.app.require_subcommand(1);
  agld::cli::add_convert(cli);
  agld::cli::add_info(cli);
  agld::cli::add_dump(cli);
  agld::cli::add_gen(cli);
  agld::cli::add_scan(cli);
  agld::cli::add_sample(cli);
  agld::cli::add_optimize(cli);
  agld::cli::add_summary(cli);
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli.app.exit(e);  // --help, --version
    std::cerr << "agld: " << e.what() << " (see agld --help)" << std::endl;
    return agld::cli::kExUsage;
  } catch (const std::exception& e) {
    std::cerr << "agld: internal error: " << e.what() << std::endl;
    return agld::cli::kExSoftware;
  }
  return cli.exit_code;
}
