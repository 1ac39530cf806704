// Uses wick as an installed package: builds a tensor, views it, prints it.
#include <wick/wick.h>

#include <iostream>

int main() {
  wick::Tensor a = wick::arange(wick::Scalar(0), wick::Scalar(6), wick::Scalar(1)).reshape({2, 3});
  std::cout << "wick " << wick::build_info().version << " from an installed package\n" << a.t() << '\n';
  return a.t().contiguous().to_vector<float>()[1] == 3.0f ? 0 : 1;
}
