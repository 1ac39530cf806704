// Writing a whole file so that a failure leaves nothing half-written behind.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace wick::io {

// Calls write with a stream on a temporary file next to path, then renames it over path.
// A failed open, write or rename raises ErrorKind::Io (message starting with op) and
// removes the temporary, so path is either the complete new file or what it was before;
// a process that has the old file memory-mapped keeps reading the old bytes, where
// truncating in place would make its reads fault with SIGBUS.
void write_file_atomically(const std::filesystem::path& path, std::string_view op,
                           const std::function<void(std::ostream&)>& write);

}  // namespace wick::io
