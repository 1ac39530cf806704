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

int run_default() {
  const int rc = run_info();
  if (rc) return rc;
  std::cout << '\n';
  return run_demo("");
}

}  // namespace wick::cli
