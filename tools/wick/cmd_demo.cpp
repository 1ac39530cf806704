// `wick demo`: a short demonstration of tensors on a device; part of the default job.
#include <iostream>

#include "commands.h"
#include "wick/wick.h"

namespace wick::cli {

int run_demo(const std::string& device_name) {
  const Device dev = device_name.empty() ? default_device() : Device::parse(device_name);
  std::cout << "demo on " << dev << ":\n";
  Tensor a = arange(Scalar(0), Scalar(6), Scalar(1), DType::F32, dev).reshape({2, 3});
  std::cout << "a = arange(6).reshape(2, 3)\n" << a << '\n';
  std::cout << "a.t() (a view, no copy)\n" << a.t() << '\n';
  std::cout << "a.to(bf16)\n" << a.to(DType::BF16) << '\n';
  manual_seed(0);
  std::cout << "randn(2, 2)\n" << randn({2, 2}, DType::F32, dev) << '\n';
  return 0;
}

Runner add_demo(CLI::App& app) {
  auto* sub = app.add_subcommand("demo", "A short demonstration of tensors on a device");
  auto device = std::make_shared<std::string>();
  sub->add_option("--device", *device, "cpu, cuda or cuda:N (default: the best present)");
  return [device] { return run_demo(*device); };
}

// The default job: what wick is and has, then real output from real weights: the
// similarity matrix of a few sentences embedded by all-MiniLM-L6-v2.
int run_default() {
  const int rc = run_info();
  if (rc) return rc;
  std::cout << '\n';
  const std::vector<std::string> sentences = {"A man is eating food.",
                                              "A man is eating a piece of bread.",
                                              "The girl is carrying a baby.",
                                              "A man is riding a horse.",
                                              "A woman is playing violin.",
                                              "A monkey is playing drums.",
                                              "Someone in a gorilla costume is playing a set of drums."};
  try {
    std::cout << "all-MiniLM-L6-v2 sentence embeddings on " << default_device() << ":\n";
    return run_embed(sentences, "", "", "f32", false, true);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Io) throw;
    std::cout << "  (" << e.what() << ")\n\n";
    return run_demo("");
  }
}

}  // namespace wick::cli
