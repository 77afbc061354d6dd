# Writes OUT from src/version.cpp.in with the build's identity: VERSION (the project's) and
# the git commit of SOURCE_DIR, "git describe --always --dirty" ("unknown" without .git or
# git: a source tarball still builds). Run at configure time and again at every build
# (the agld_version target), so that a rebuild after a commit carries the new commit;
# configure_file rewrites OUT only when its text changes, so nothing recompiles otherwise, and
# a new commit recompiles this one file (include/agld/version.hpp declares what it defines).
# Checkpoints record the identity and resume refuses another's (docs/reliability.md).
#   cmake -DSOURCE_DIR=... -DVERSION=0.1.0 -DOUT=.../version.cpp -P agld_version.cmake
set(AGLD_GIT_COMMIT "unknown")
if(EXISTS "${SOURCE_DIR}/.git")
  find_program(AGLD_GIT git)
  if(AGLD_GIT)
    execute_process(COMMAND "${AGLD_GIT}" -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                    OUTPUT_VARIABLE described RESULT_VARIABLE failed ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT failed AND described)
      set(AGLD_GIT_COMMIT "${described}")
    endif()
  endif()
endif()
set(PROJECT_VERSION "${VERSION}")
configure_file("${SOURCE_DIR}/src/version.cpp.in" "${OUT}" @ONLY)
