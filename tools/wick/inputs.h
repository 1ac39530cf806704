// The inputs of `wick tokenize`, `wick embed` (texts) and `wick inspect` (files), from the
// command line, files or standard input, collected in the order given:
//   ITEM       one input, as typed (a text, or a file's path);
//   -          one input read from standard input, byte for byte (a final newline
//              included): a text too long for a command line, or a file's bytes piped in;
//   --file F   one input per line of F (without the line break, "\r\n" too); F = "-"
//              reads the lines of standard input.
// Standard input can be read once: "-" and "--file -" together are a usage error.
#pragma once

#include <CLI/CLI.hpp>
#include <istream>
#include <string>
#include <vector>

namespace wick::cli {

struct TextInputs {
  std::vector<std::string> args;   // positional ITEM... (may hold "-")
  std::vector<std::string> files;  // --file F (repeatable)
};

// One collected input: the item as given (a text or a path), or, for "-", all of standard
// input.
struct Input {
  std::string value;
  bool from_stdin = false;
};

// Registers TEXT... and --file on a subcommand (texts).
void add_text_inputs(CLI::App& sub, TextInputs& in);
// Registers FILE... and --file on a subcommand (paths; "-" pipes one file's bytes in).
// `required`: at least one must be given.
void add_path_inputs(CLI::App& sub, TextInputs& in);

// The inputs, in order: positional arguments first, then each --file. Throws UsageError
// when there are none or standard input is asked for twice, wick::Error (Io) when a
// --file is a directory or cannot be read. `command` starts the messages ("embed: ...")
// and `noun` names the inputs in them ("texts", "files").
std::vector<Input> collect_inputs(const TextInputs& in, const std::string& command, const std::string& noun,
                                  std::istream& standard_input);
// collect_inputs for texts: each input's value.
std::vector<std::string> collect_texts(const TextInputs& in, const std::string& command, std::istream& standard_input);

}  // namespace wick::cli
