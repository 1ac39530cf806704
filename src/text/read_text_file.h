// Reads a tokenizer data file whole.
#pragma once

#include <string>

namespace wick::text {

// The file's bytes. Throws wick::Error Io naming what and path when it cannot be read.
std::string read_text_file(const std::string& path, const char* what);

}  // namespace wick::text
