# Compiler flags shared by every wick target (applied through wick_options).
add_library(wick_options INTERFACE)
target_compile_options(wick_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
if(WICK_CPU_ARCH AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(wick_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=${WICK_CPU_ARCH}>)
endif()
if(WICK_SANITIZE)
  target_compile_options(wick_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(wick_options INTERFACE -fsanitize=address,undefined)
endif()
if(WICK_TSAN)
  target_compile_options(wick_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(wick_options INTERFACE -fsanitize=thread)
endif()
