#include <wick/wick.h>

#include <iostream>

int main(int argc, char** argv) {
  const wick::Device dev = wick::default_device();  // cuda:0 if a GPU is present, else cpu
  wick::Tensor a = wick::randn({2, 3}, wick::DType::F32, dev);
  wick::Tensor b = wick::softmax(wick::matmul(a, a.t()));  // a.t() is a view
  std::vector<float> v = b.to_vector<float>();             // waits for the GPU
  std::cout << "on " << dev << ": each row sums to " << v[0] + v[1] << ", " << v[2] + v[3] << '\n';
  if (argc > 1) {
    auto weights = wick::safetensors::load(argv[1]);  // zero-copy views of the mapping
    std::cout << weights.size() << " tensors in " << argv[1] << '\n';
  }
}
