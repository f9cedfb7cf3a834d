// Where colo finds the files it ships beside its binary: the scripts of
// `colo bench` (bench/) and the Python client (python/).
#pragma once

#include <optional>
#include <string>

namespace colo {

// The directory `name` holding the readable file `marker`: $<env_var> when set
// (and holding it), else <name> beside or above the colo executable (a build
// directory inside the repository: <repo>/build/colo finds <repo>/<name>), else
// share/colo/<name> of an installation (<prefix>/bin/colo), else ./<name>.
// The path is resolved (no "..", no links); nullopt when none holds it.
std::optional<std::string> find_share_dir(const std::string& name, const std::string& marker,
                                          const char* env_var);

// The Python client's directory (colo_progress.py; $COLO_PYTHON_DIR overrides):
// find_share_dir's, else embedded_python_client_dir() (a colo binary alone).
std::optional<std::string> find_python_client_dir();

// The client compiled into this binary (common/embedded_client.h), written
// once to <state dir>/python-client/<hash of its files>/ (0755, files 0644
// by the umask): nullopt when that cannot be written.
std::optional<std::string> embedded_python_client_dir();

// `value` of PYTHONPATH with `dir` appended (unchanged when it names dir): what a job sees, so that
// its `import colo_progress` works with no install, while a client installed in its own environment
// (earlier on the path) still wins.
std::string append_python_path(const std::string& value, const std::string& dir);

}  // namespace colo
