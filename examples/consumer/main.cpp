// Uses wick as an installed package: builds a tensor, views it, prints it, and says whether
// the installed CUDA backend module was found (libwick loads it from beside itself).
// Exit status 0 only if the values are right and, in a CUDA build, the module loaded.
#include <wick/wick.h>

#include <iostream>

int main() {
  wick::Tensor a = wick::arange(wick::Scalar(0), wick::Scalar(6), wick::Scalar(1)).reshape({2, 3});
  std::cout << "wick " << wick::build_info().version << " from an installed package\n" << a.t() << '\n';
  const std::string cuda = wick::cuda_backend_status();
  std::cout << "cuda backend: " << cuda << '\n';
  const bool module_ok = !wick::build_info().cuda || cuda.rfind("loaded from ", 0) == 0;
  return a.t().contiguous().to_vector<float>()[1] == 3.0f && module_ok ? 0 : 1;
}
