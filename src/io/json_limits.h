// Parsing JSON that comes from files (safetensors headers, config.json, ...) with the limits
// every reader of the library shares, so that hostile input gives a wick::Error rather than
// a stack overflow or a message the size of the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace wick::json {

// The most arrays/objects one document may nest. serde_json, which the reference
// safetensors and Hugging Face's tokenizers parse with, stops at a recursion limit of 128,
// which leaves 127 levels; wick accepts the same. Far deeper input overflowed the stack in
// nlohmann's recursive dump().
inline constexpr int kMaxDepth = 127;

// Parses text as one JSON document. Every failure is a Format error "<what>: <why>", where
// `what` says which document is bad ("safetensors: header is not valid JSON", "gpt2: invalid
// JSON in 'dir/config.json'") and why is nlohmann's message (one line, cut short), the
// nesting limit, or a UTF-8 byte-order mark at the start (which nlohmann would skip, but
// JSON, serde_json and Python's json module do not allow).
nlohmann::json parse(std::string_view text, std::string_view what);

// The same, also listing the keys of the top-level object in the order written (the
// returned object is sorted by key, as nlohmann::json keeps it); a key written twice is
// listed once, at its first place, and holds its last value, as nlohmann keeps it.
nlohmann::json parse(std::string_view text, std::string_view what, std::vector<std::string>& top_level_keys);

// A JSON value for an error message, at most about `limit` characters however large or
// deep the value is (a header may hold huge arrays or strings).
std::string brief(const nlohmann::json& value, size_t limit = 60);

}  // namespace wick::json
