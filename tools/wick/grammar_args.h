// The output constraint options of `wick generate` and `wick chat`, as llama.cpp's CLI
// spells them: --grammar GBNF, --grammar-file FILE, --json-schema JSON, --json-schema-file
// FILE (at most one).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "wick/text/grammar.h"

namespace wick::cli {

struct GrammarArgs {
  std::string grammar, grammar_file, json_schema, json_schema_file;
};

void add_grammar_options(CLI::App* sub, GrammarArgs& a);
// The grammar the options ask for, read and compiled (before any model loads); nullopt for
// none. InvalidArgument naming the option: two given, a file that cannot be read, a grammar
// or schema that does not compile (the compiler's message).
std::optional<text::Grammar> grammar_from_args(const GrammarArgs& a, const char* command);

}  // namespace wick::cli
