# Sourced on the GPU machine after h200_check.sh unpacked the carried build: the library
# path (libwick.so, and NCCL from PyTorch's wheel: the image's /usr/local/cuda has no
# libnccl) and NVLink multicast kept off.
export LD_LIBRARY_PATH=$PWD/build/src:$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
