// The GGUF half of `wick inspect` (cmd_inspect.cpp picks it by the file's magic bytes).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace wick::cli {

// Whether the file starts with GGUF's magic bytes (false if it cannot be read: the
// safetensors reader then reports what is wrong).
bool has_gguf_magic(const std::string& path);

// Prints version, alignment, metadata (key, type, value; long arrays elided) and the
// tensors (name, ggml type, row-major shape, bytes, offset) of a GGUF file as text;
// names, keys and strings are escaped (escape.h). Bad files raise wick::Error.
void print_gguf_text(const std::string& path);
// The same listing as one JSON object.
nlohmann::ordered_json gguf_json(const std::string& path);

}  // namespace wick::cli
