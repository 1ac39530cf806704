// BERT's basic tokenization, as Hugging Face's BertNormalizer (clean_text, handle_chinese_chars,
// strip_accents = lowercase, lowercase) followed by BertPreTokenizer (split on whitespace,
// isolate punctuation).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

// The words of text, each UTF-8. Bytes that are not valid UTF-8 count as U+FFFD, which
// clean_text removes.
std::vector<std::string> bert_basic_tokenize(std::string_view text, bool lowercase);

}  // namespace wick::text
