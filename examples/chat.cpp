// A language model in a few lines of the C++ API: load a GGUF file or a Hugging Face folder,
// render a conversation with its chat template, and stream a sampled reply.
//
//   chat MODEL [QUESTION]      e.g. chat Llama-3.2-1B-Instruct-Q4_K_M.gguf "Why is the sky blue?"
#include <wick/models/language_model.h>
#include <wick/serve/generator.h>
#include <wick/wick.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: chat MODEL [QUESTION]\n";
    return 2;
  }
  try {
    const auto lm = wick::models::LanguageModel::load(argv[1], {.device = wick::default_device()});
    const std::string question = argc > 2 ? argv[2] : "Hello! Who are you?";
    // With a chat template the question is a user turn; without one it is plain text to continue.
    const bool chat = lm.has_chat_template();
    const std::string prompt = chat ? lm.render_chat({{"user", question}}) : question;
    const std::vector<int32_t> ids = lm.encode(prompt, /*add_special=*/!chat);

    wick::serve::Generator gen(lm.model(), {.temperature = 0.7, .top_p = 0.95, .seed = 42});
    auto text = lm.tokenizer().decode_stream(/*skip_special=*/true);
    const auto stats = gen.generate(
        ids, 64, [&](int32_t id) { std::cout << text.push(id) << std::flush; }, lm.stop_tokens());
    std::cout << "\n[" << lm.architecture() << " on " << lm.model().device() << ": " << stats.generated_tokens
              << " tokens generated]\n";
  } catch (const wick::Error& e) {
    std::cerr << "chat: " << e.what() << '\n';
    return 1;
  }
}
