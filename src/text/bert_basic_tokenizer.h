// BERT's basic tokenization, as Hugging Face's BertNormalizer (clean_text, handle_chinese_chars,
// strip_accents = lowercase, lowercase) followed by BertPreTokenizer (split on whitespace,
// isolate punctuation).
// Unicode data comes from our generated tables (Python's Unicode 14). Hugging Face classifies
// Mn / P* / C* with older (Unicode 8-era) tables, so for characters added or recategorized
// since then the two can differ: measured over ~42k assigned code points, 503 differ, all of
// them such characters; common text is unaffected.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

// The words of text, each UTF-8. Bytes that are not valid UTF-8 count as U+FFFD, which
// clean_text removes.
std::vector<std::string> bert_basic_tokenize(std::string_view text, bool lowercase);

}  // namespace wick::text
