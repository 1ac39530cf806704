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
             "' is a directory; give a text file with one input per line");
  std::ifstream f(path);
  WICK_CHECK(f.is_open(), Io, command, ": cannot open --file '", path, "': ", std::strerror(errno));
  read_lines(f, "--file '" + path + "'", command, out);
}

}  // namespace

void add_text_inputs(CLI::App& sub, TextInputs& in) {
  sub.add_option("--file", in.files, "read texts from a file, one per line ('-': standard input)");
  sub.add_option("texts", in.args, "the texts ('-': all of standard input as one text)");
}

void add_path_inputs(CLI::App& sub, TextInputs& in) {
  sub.add_option("--file", in.files, "read paths from a file, one per line ('-': standard input)");
  sub.add_option("files", in.args, "the files ('-': one file's bytes from standard input)");
}

std::vector<Input> collect_inputs(const TextInputs& in, const std::string& command, const std::string& noun,
                                  std::istream& standard_input) {
  int stdin_uses = 0;
  for (const auto& a : in.args) stdin_uses += a == "-";
  for (const auto& f : in.files) stdin_uses += f == "-";
  if (stdin_uses > 1) throw UsageError(command + ": standard input ('-') can be read only once");
  std::vector<Input> inputs;
  for (const auto& a : in.args) {
    if (a != "-") {
      inputs.push_back({a, false});
      continue;
    }
    std::string all{std::istreambuf_iterator<char>(standard_input), std::istreambuf_iterator<char>()};
    WICK_CHECK(!standard_input.bad(), Io, command, ": cannot read standard input");
    inputs.push_back({std::move(all), true});
  }
  std::vector<std::string> lines;
  for (const auto& f : in.files) {
    if (f == "-")
      read_lines(standard_input, "standard input", command, lines);
    else
      read_file_lines(f, command, lines);
  }
  for (auto& l : lines) inputs.push_back({std::move(l), false});
  if (inputs.empty())
    throw UsageError(command + ": no " + noun + " given (pass " + (noun == "files" ? "FILE" : "TEXT") +
                     "..., --file F, or - for standard input)");
  return inputs;
}

std::vector<std::string> collect_texts(const TextInputs& in, const std::string& command, std::istream& standard_input) {
  std::vector<std::string> texts;
  for (Input& i : collect_inputs(in, command, "texts", standard_input)) texts.push_back(std::move(i.value));
  return texts;
}

}  // namespace wick::cli
