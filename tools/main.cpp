// agld: the command line. A thin layer over the library's service functions.
#include <iostream>

#include "agld/version.hpp"
#include "cli_common.hpp"

int main(int argc, char** argv) {
  agld::cli::Cli cli;
  cli.app.set_version_flag("--version", std::string("agld ") + agld::kVersion);
  cli.app.require_subcommand(1);
  agld::cli::add_convert(cli);
  agld::cli::add_info(cli);
  agld::cli::add_dump(cli);
  agld::cli::add_gen(cli);
  agld::cli::add_scan(cli);
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
