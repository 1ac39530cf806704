#include "inputs.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "commands.h"
#include "wick/error.h"

namespace wick::cli {

namespace {

// Appends the lines of `in` (line breaks removed) to `out`; a read error is an error, not
// a short list.
void read_lines(std::istream& in, const std::string& what, const std::string& command, std::vector<std::string>& out) {
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
  }
  WICK_CHECK(!in.bad(), Io, command, ": cannot read ", what);
}

void read_file_lines(const std::string& path, const std::string& command, std::vector<std::string>& out) {
  std::error_code ec;
  WICK_CHECK(!std::filesystem::is_directory(path, ec), Io, command, ": --file '", path,
             "' is a directory; give a text file with one text per line");
  std::ifstream f(path);
  WICK_CHECK(f.is_open(), Io, command, ": cannot open --file '", path, "': ", std::strerror(errno));
  read_lines(f, "--file '" + path + "'", command, out);
}

}  // namespace

void add_text_inputs(CLI::App& sub, TextInputs& in) {
  sub.add_option("--file", in.files, "read texts from a file, one per line ('-': standard input)");
  sub.add_option("texts", in.args, "the texts ('-': all of standard input as one text)");
}

std::vector<std::string> collect_texts(const TextInputs& in, const std::string& command, std::istream& standard_input) {
  int stdin_uses = 0;
  for (const auto& a : in.args) stdin_uses += a == "-";
  for (const auto& f : in.files) stdin_uses += f == "-";
  if (stdin_uses > 1) throw UsageError(command + ": standard input ('-') can be read only once");
  std::vector<std::string> texts;
  for (const auto& a : in.args) {
    if (a != "-") {
      texts.push_back(a);
      continue;
    }
    std::string all{std::istreambuf_iterator<char>(standard_input), std::istreambuf_iterator<char>()};
    WICK_CHECK(!standard_input.bad(), Io, command, ": cannot read standard input");
    texts.push_back(std::move(all));
  }
  for (const auto& f : in.files) {
    if (f == "-")
      read_lines(standard_input, "standard input", command, texts);
    else
      read_file_lines(f, command, texts);
  }
  if (texts.empty()) throw UsageError(command + ": no texts given (pass TEXT..., --file F, or - for standard input)");
  return texts;
}

}  // namespace wick::cli
