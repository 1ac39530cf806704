# Third-party dependencies, all from Debian packages or the CUDA toolkit.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(WICK_CBLAS_INCLUDE cblas.h PATH_SUFFIXES openblas openblas-pthread
          HINTS /usr/include/x86_64-linux-gnu/openblas-pthread)
if(NOT WICK_CBLAS_INCLUDE)
  message(FATAL_ERROR "cblas.h not found: install libopenblas-dev")
endif()

set(WICK_HAVE_CUDA OFF)
if(WICK_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_ARCHITECTURES ${WICK_CUDA_ARCHS})
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag (CUDA 12+ supports it): teach it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(WICK_HAVE_CUDA ON)
    message(STATUS "wick: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, archs ${WICK_CUDA_ARCHS})")
  else()
    message(STATUS "wick: nvcc not found, CUDA backend OFF")
  endif()
endif()

# Tokenizers: PCRE2 (8-bit, JIT) for the split regexes of tokenizer.json / GGUF vocabularies,
# utf8proc for Unicode normalization (NFC/NFKC/NFD/NFKD). Debian: libpcre2-dev, libutf8proc-dev.
find_package(PkgConfig REQUIRED)
pkg_check_modules(WICK_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(WICK_UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
