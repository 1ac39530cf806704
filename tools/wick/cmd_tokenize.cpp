// `wick tokenize --model M [--json] [--no-special] TEXT...` prints the token ids of each text
// (inputs.h: TEXT, - for standard input, --file for one text per line): one line of ids
// separated by spaces per text, or with --json one JSON object per text
// ({"text", "ids", "pieces"}). `wick detokenize --model M IDS...` prints the text of ids.
// M is a folder (tokenizer.json [+ tokenizer_config.json]; GPT-2's vocab.json + merges.txt
// or encoder.json + vocab.bpe; BERT's vocab.txt, chosen when that is all it holds or with
// --wordpiece), a tokenizer.json file, or a GGUF file (its tokenizer.ggml.* vocabulary).
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "inputs.h"
#include "wick/error.h"
#include "wick/gguf.h"
#include "wick/text/tokenizer.h"

namespace wick::cli {
namespace {

namespace fs = std::filesystem;

struct TokenizeArgs {
  std::string model;
  TextInputs inputs;
  bool wordpiece = false;
  bool json = false;
  bool no_special = false;
  size_t max_length = 0;     // 0: no limit
  std::vector<int64_t> ids;  // detokenize
  bool skip_special = false;
};

// The tokenizer the model path names.
text::Tokenizer load(const TokenizeArgs& args, const char* command) {
  const fs::path path(args.model);
  std::error_code ec;
  WICK_CHECK(fs::exists(path, ec), Io, command, ": --model '", args.model, "' does not exist");
  if (!fs::is_directory(path, ec)) {
    if (path.extension() == ".gguf") return text::Tokenizer::from_gguf(gguf::File::open(path));
    WICK_CHECK(path.extension() == ".json", Io, command, ": --model '", args.model,
               "' is neither a folder, a tokenizer.json nor a .gguf file");
    const fs::path cfg = path.parent_path() / "tokenizer_config.json";
    return text::Tokenizer::from_json_file(path, fs::exists(cfg, ec) ? cfg : fs::path());
  }
  if (args.wordpiece) {
    WICK_CHECK(fs::exists(path / "vocab.txt", ec), Io, command, ": '", args.model, "' has no vocab.txt");
    return text::Tokenizer::from_wordpiece_vocab(path);
  }
  return text::Tokenizer::from_folder(path);
}

int run_tokenize(const TokenizeArgs& args) {
  const std::vector<std::string> texts = collect_texts(args.inputs, "tokenize", std::cin);
  const text::Tokenizer tok = load(args, "tokenize");
  const text::EncodeOptions o{
      .add_special = !args.no_special, .parse_special = !args.no_special, .max_length = args.max_length};
  for (const auto& t : texts) {
    const std::vector<int32_t> ids = tok.encode(t, o);
    if (args.json) {
      nlohmann::ordered_json pieces = nlohmann::ordered_json::array();
      for (int32_t id : ids) pieces.push_back(tok.token(id));
      const nlohmann::ordered_json line = {{"text", t}, {"ids", ids}, {"pieces", pieces}};
      // Invalid UTF-8 (a text's bytes, a partial byte token) is written as U+FFFD.
      std::cout << line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
      continue;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << '\n';
  }
  return 0;
}

int run_detokenize(const TokenizeArgs& args) {
  std::vector<int32_t> ids;
  for (int64_t id : args.ids) {
    if (id < 0 || id > INT32_MAX) throw UsageError("detokenize: id " + std::to_string(id) + " is out of range");
    ids.push_back(int32_t(id));
  }
  std::cout << load(args, "detokenize").decode(ids, args.skip_special) << '\n';
  return 0;
}

}  // namespace

Runner add_tokenize(CLI::App& app) {
  auto* sub =
      app.add_subcommand("tokenize", "Print the token ids of a text (tokenizer.json, GGUF, GPT-2 BPE, WordPiece)");
  auto args = std::make_shared<TokenizeArgs>();
  sub->add_option("--model", args->model, "tokenizer folder, tokenizer.json or .gguf file")->required();
  sub->add_flag("--wordpiece", args->wordpiece, "use WordPiece (vocab.txt) even if other files are present");
  sub->add_flag("--json", args->json, "one JSON object per text: text, ids and the token strings (pieces)");
  sub->add_flag("--no-special", args->no_special,
                "add no BOS/EOS/[CLS]/[SEP] and read special-token text (\"<|eot_id|>\") as plain text");
  sub->add_option("--max-length", args->max_length,
                  "keep at most this many ids, the added special tokens (BOS, [CLS], [SEP]) included; 0: all");
  add_text_inputs(*sub, args->inputs);
  return [args]() -> int { return run_tokenize(*args); };
}

Runner add_detokenize(CLI::App& app) {
  auto* sub = app.add_subcommand("detokenize", "Print the text of token ids");
  auto args = std::make_shared<TokenizeArgs>();
  sub->add_option("--model", args->model, "tokenizer folder, tokenizer.json or .gguf file")->required();
  sub->add_flag("--skip-special", args->skip_special, "leave special tokens out of the text");
  sub->add_option("IDS", args->ids, "token ids")->required();
  return [args]() -> int { return run_detokenize(*args); };
}

}  // namespace wick::cli
