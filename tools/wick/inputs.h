// The texts of `wick tokenize` and `wick embed`, from the command line, files or standard
// input, collected in the order given:
//   TEXT       one text, as typed;
//   -          one text: all of standard input, byte for byte (a final newline included),
//              for texts too long for a command line;
//   --file F   one text per line of F (without the line break, "\r\n" too); F = "-" reads
//              the lines of standard input.
// Standard input can be read once: "-" and "--file -" together are a usage error.
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <string>
#include <vector>

namespace wick::cli {

struct TextInputs {
  std::vector<std::string> args;   // positional TEXT... (may hold "-")
  std::vector<std::string> files;  // --file F (repeatable)
};

// Registers TEXT... and --file on a subcommand.
void add_text_inputs(CLI::App& sub, TextInputs& in);

// The texts, in order: positional arguments first, then each --file. Throws UsageError
// when there are none or standard input is asked for twice, wick::Error (Io) when a file
// is a directory or cannot be read. `command` starts the messages ("embed: ...").
std::vector<std::string> collect_texts(const TextInputs& in, const std::string& command, std::istream& standard_input);

}  // namespace wick::cli
