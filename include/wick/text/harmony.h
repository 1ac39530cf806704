// OpenAI's harmony response format (gpt-oss): a reply is a run of messages, each
//   [<|start|>assistant] <|channel|>CHANNEL [to=RECIPIENT] [<|constrain|>TYPE] <|message|>BODY
// ended by <|end|>, <|call|> or <|return|> (the last two are stop tokens: the end of the
// output). Channel `analysis` is the reasoning, `final` the answer, `commentary` to
// `functions.NAME` a tool call whose body is its JSON arguments (without a recipient, a
// preamble shown to the user).
//
// HarmonyDecoder turns that stream, as it is generated, into the form wick's other thinking
// and tool-calling models write, so that one reasoning split (reasoning.h) and one tool-call
// parser (tool_calls.h, Hermes) serve it: analysis bodies become "<think>…</think>", final and
// preamble bodies plain text, tool calls Hermes blocks written by write_tool_call.
// Text before any message header (a reply that does not use the format) is passed as it is.
#pragma once

#include <string>
#include <string_view>

namespace wick::text {

// Whether a chat template renders the harmony format (gpt-oss's).
bool template_is_harmony(std::string_view chat_template);

class HarmonyDecoder {
 public:
  // The next piece of output, rewritten. Text that may be the start of a marker is held back
  // until the next piece shows what it is; a tool call goes out whole once its body ends.
  std::string push(std::string_view text);
  // The end of the output: what was held back (an unfinished tool call as a call with the
  // body so far, an open analysis closed).
  std::string flush();

 private:
  enum class State { Outside, Header, Body };
  std::string finish_message();
  State state_ = State::Outside;
  std::string held_;  // text not yet placed
  std::string body_;  // a tool call's body so far
  enum class Kind { Reasoning, Text, Call } kind_ = Kind::Text;
  std::string recipient_;
};

}  // namespace wick::text
