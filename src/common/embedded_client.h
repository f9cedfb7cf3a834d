// The Python client (python/colo_progress.py, python/colo_data.py) compiled
// into the colo binary, so that a binary copied alone, outside a checkout or
// an installation, still gives its jobs `import colo_progress`
// (find_python_client_dir() writes it out when no directory holds it).
#pragma once

#include <span>
#include <string_view>

namespace colo {

struct EmbeddedFile {
  std::string_view name;     // e.g. "colo_progress.py"
  std::string_view content;  // the file's bytes as the build found them
};

std::span<const EmbeddedFile> embedded_python_client();

}  // namespace colo
