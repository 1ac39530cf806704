// `wick inspect` for GGUF files (wired into cmd_inspect.cpp by the lead).
#pragma once

#include <string>

namespace wick::cli {

// Prints version, alignment, metadata (key, type, value; long arrays elided) and the
// tensors (name, ggml type, row-major shape, bytes, offset) of a GGUF file, as text or
// as one JSON object. Returns the process exit code; bad files raise wick::Error.
int run_inspect_gguf(const std::string& path, bool json);

}  // namespace wick::cli
