#include "grammar_args.h"

#include <vector>

#include "model_args.h"
#include "wick/error.h"
#include "wick/text/json_schema.h"

namespace wick::cli {

void add_grammar_options(CLI::App* sub, GrammarArgs& a) {
  sub->add_option("--grammar", a.grammar, "constrain the output to this GBNF grammar (llama.cpp's dialect; rule root)");
  sub->add_option("--grammar-file", a.grammar_file, "the same, read from a file");
  sub->add_option("--json-schema", a.json_schema, "constrain the output to JSON valid under this JSON Schema");
  sub->add_option("--json-schema-file", a.json_schema_file, "the same, read from a file");
}

std::optional<text::Grammar> grammar_from_args(const GrammarArgs& a, const char* command) {
  std::vector<const char*> given;
  for (const auto& [value, name] : {std::pair{&a.grammar, "--grammar"},
                                    {&a.grammar_file, "--grammar-file"},
                                    {&a.json_schema, "--json-schema"},
                                    {&a.json_schema_file, "--json-schema-file"}})
    if (!value->empty()) given.push_back(name);
  if (given.empty()) return std::nullopt;
  WICK_CHECK(given.size() == 1, InvalidArgument, command, ": ", given[0], " and ", given[1],
             ": give one output constraint, not several");
  const std::string option = given[0];
  try {
    if (option == "--grammar") return text::Grammar::from_gbnf(a.grammar);
    if (option == "--grammar-file")
      return text::Grammar::from_gbnf(read_option_file(a.grammar_file, given[0], command));
    const std::string schema =
        option == "--json-schema" ? a.json_schema : read_option_file(a.json_schema_file, given[0], command);
    return text::Grammar::from_gbnf(text::json_schema_to_gbnf(schema));
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with(command)) throw;  // read_option_file's own message
    fail(ErrorKind::InvalidArgument, command, ": ", option, ": ", what);
  }
}

}  // namespace wick::cli
