// `wick tokenize --model DIR [--wordpiece] TEXT... [--file F]`: print the token ids of each
// text (inputs.h: TEXT, - for standard input, --file for one text per line), one line of
// ids separated by spaces per text, and nothing else on stdout. DIR holds vocab.json + merges.txt (or encoder.json +
// vocab.bpe) for GPT-2's BPE, or vocab.txt for BERT WordPiece (chosen automatically when
// that is all DIR holds, or forced with --wordpiece).
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "inputs.h"
#include "wick/error.h"
#include "wick/text/gpt2_tokenizer.h"
#include "wick/text/wordpiece_tokenizer.h"

namespace wick::cli {
namespace {

struct TokenizeArgs {
  std::string model_dir;
  TextInputs inputs;
  bool wordpiece = false;
  size_t max_length = 512;
};

void print_ids(const std::vector<int32_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
  std::cout << '\n';
}

int run_tokenize(const TokenizeArgs& args) {
  namespace fs = std::filesystem;
  const std::vector<std::string> texts = collect_texts(args.inputs, "tokenize", std::cin);
  const fs::path dir(args.model_dir);
  std::error_code ec;
  const bool has_bpe = (fs::exists(dir / "vocab.json", ec) && fs::exists(dir / "merges.txt", ec)) ||
                       (fs::exists(dir / "encoder.json", ec) && fs::exists(dir / "vocab.bpe", ec));
  const bool has_wordpiece = fs::exists(dir / "vocab.txt", ec);
  if (args.wordpiece || (has_wordpiece && !has_bpe)) {
    WICK_CHECK(has_wordpiece, Io, "tokenize: '", args.model_dir, "' has no vocab.txt");
    const text::WordPieceTokenizer tok((dir / "vocab.txt").string());
    for (const auto& t : texts) print_ids(tok.encode(t, args.max_length));
    return 0;
  }
  WICK_CHECK(has_bpe, Io, "tokenize: '", args.model_dir,
             "' holds neither vocab.json + merges.txt (GPT-2 BPE) nor vocab.txt (WordPiece)");
  const text::Gpt2Tokenizer tok(args.model_dir);
  for (const auto& t : texts) print_ids(tok.encode(t));
  return 0;
}

}  // namespace

Runner add_tokenize(CLI::App& app) {
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text (GPT-2 BPE or BERT WordPiece)");
  auto args = std::make_shared<TokenizeArgs>();
  sub->add_option("--model", args->model_dir, "directory with vocab.json + merges.txt, or vocab.txt")->required();
  sub->add_flag("--wordpiece", args->wordpiece, "use WordPiece (vocab.txt) even if BPE files are present");
  sub->add_option("--max-length", args->max_length, "WordPiece: keep at most this many ids, [CLS] and [SEP] included")
      ->capture_default_str();
  add_text_inputs(*sub, args->inputs);
  return [args]() -> int { return run_tokenize(*args); };
}

}  // namespace wick::cli
