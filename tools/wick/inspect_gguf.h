// The GGUF half of `wick inspect` (cmd_inspect.cpp picks it by the file's magic bytes).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "wick/gguf.h"

namespace wick::cli {

// Whether bytes (a file's first) are GGUF's magic (else they are read as safetensors,
// which has no magic: it starts with its header length), and the same for the file at a
// path (false if it cannot be read: the safetensors reader then says what is wrong).
bool bytes_have_gguf_magic(std::string_view bytes);
bool file_has_gguf_magic(const std::string& path);

// Prints version, alignment, metadata (key, type, value; long arrays elided) and the
// tensors (name, ggml type, row-major shape, bytes, offset) of a GGUF file as text under
// the heading `name`; names, keys and strings are escaped (escape.h).
void print_gguf_text(const std::string& name, const gguf::File& f);
// The same listing as one JSON object.
nlohmann::ordered_json gguf_json(const std::string& name, const gguf::File& f);

}  // namespace wick::cli
