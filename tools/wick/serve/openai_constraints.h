// What a generation request constrains its output to, as a grammar (wick/text/grammar.h):
// OpenAI's response_format ({"type": "json_object"} and {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"}}), llama-server's `grammar` (GBNF) and
// `json_schema`, and vLLM's guided_json / guided_grammar / guided_regex / guided_choice.
#pragma once

#include <optional>

#include "request_json.h"
#include "wick/text/grammar.h"

namespace wick::serve {

// The request's constraint, compiled; nullopt when it has none. ApiError 400 naming the
// field for a wrong shape, two constraints at once, or a schema / grammar / pattern that
// does not compile (the compiler's message: line and column, the schema path, the keyword
// strict mode cannot enforce).
// raw: the body's text, for the key order of a schema (f's objects have theirs sorted);
// empty: sorted order.
std::optional<text::Grammar> parse_output_constraint(const Fields& f, std::string_view raw);

}  // namespace wick::serve
