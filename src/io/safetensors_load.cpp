// safetensors: tensors from a validated File, viewing its bytes without copying.
#include "wick/io.h"

namespace wick::safetensors {

Buffer File::raw(const std::string& name) const {
  const TensorInfo& t = info(name);
  return bytes_.slice(8 + header_size_ + t.begin, t.nbytes());
}

Tensor File::tensor(const std::string& name) const {
  const TensorInfo& t = info(name);
  WICK_CHECK(t.wick_dtype.has_value(), Unsupported, "safetensors: tensor '", name, "' has dtype ", t.dtype,
             ", which wick does not compute on; read its bytes with raw()");
  const DType dtype = *t.wick_dtype;
  const Buffer bytes = raw(name);
  // The format does not align data (the header length is any multiple of 8 when written
  // by the reference, but not required to be), so unaligned tensors are copied.
  if (reinterpret_cast<uintptr_t>(bytes.data()) % dtype_size(dtype) == 0)
    return Tensor::from_buffer(bytes.view(dtype, t.shape));
  return Tensor::from_data(bytes.data(), dtype, size_t(t.shape.numel()), t.shape);
}

std::map<std::string, Tensor> load(const std::filesystem::path& path) {
  const File f = File::open(path);
  std::map<std::string, Tensor> out;
  for (const TensorInfo& t : f.tensors())
    if (t.wick_dtype) out.emplace(t.name, f.tensor(t.name));
  return out;
}

}  // namespace wick::safetensors
