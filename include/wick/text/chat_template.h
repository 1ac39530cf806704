// Chat templates: the Jinja subset that Hugging Face chat templates use, rendered exactly as
// transformers' apply_chat_template renders them (jinja2's ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loopcontrols; raise_exception, strftime_now, namespace and a
// tojson that is json.dumps with ensure_ascii=False). docs/chat_templates.md lists the subset.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace wick::text {

struct ChatMessage {
  std::string role, content;
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  // A JSON object merged into the context last (e.g. {"tools": [...], "enable_thinking": false});
  // empty means none. Its keys override messages/bos_token/... of the same name.
  std::string extra_context_json;
};

// Bounds that keep a hostile template (or context) from exhausting memory or time. Every
// limit hit is a wick::Error naming the limit.
struct ChatTemplateLimits {
  size_t max_output_bytes = 32u << 20;    // rendered text, also any one built string
  size_t max_steps = 50'000'000;          // evaluations + loop iterations; also values' nodes walked
  size_t max_depth = 200;                 // nesting in the source and macro recursion
  size_t max_container_items = 1u << 20;  // items in one list built by the template
  // Stack the evaluator may use (macro recursion times expression nesting); the calling
  // thread must have at least this much left.
  size_t max_stack_bytes = 1u << 20;
  // Wall-clock time of one render, checked every 1024 steps: a step can be linear in a large
  // string (`s.find(t)`), which steps alone undercount.
  double max_seconds = 10.0;
};

class ChatTemplate {
 public:
  // Parses the template once. Throws wick::Error Format naming line:column on a syntax error
  // (unterminated tag, unknown statement, nesting deeper than limits.max_depth).
  static ChatTemplate parse(std::string_view source, const ChatTemplateLimits& limits = {});

  // Renders with messages = [{role, content}...], add_generation_prompt, bos_token, eos_token,
  // tools = None and documents = None (as transformers passes them), then extra_context_json.
  // raise_exception(msg) in the template throws wick::Error InvalidArgument carrying msg; other
  // template errors (type errors, undefined access) are InvalidArgument naming line:column.
  std::string render(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options = {}) const;
  // Renders with the variables of a JSON object (messages with tool calls or content lists,
  // tools, any kwargs). tools/documents default to None and add_generation_prompt to false
  // when absent, as in apply_chat_template. Throws wick::Error Format when it is not an object.
  std::string render_json(std::string_view context_json) const;
  const std::string& source() const;  // the template's text (newlines normalized)

  struct Impl;

 private:
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;  // immutable after parse: render is const and thread-safe
};

}  // namespace wick::text
