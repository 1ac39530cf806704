// `wick inspect FILE`: list a checkpoint's tensors and metadata.
#include <iostream>

#include "commands.h"
#include "wick/wick.h"

namespace wick::cli {

Runner add_inspect(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "List the tensors and metadata of a safetensors file");
  auto path = std::make_shared<std::string>();
  sub->add_option("file", *path, "the file to inspect")->required();
  return [path]() -> int { fail(ErrorKind::Unsupported, "inspect: not implemented yet"); };
}

}  // namespace wick::cli
