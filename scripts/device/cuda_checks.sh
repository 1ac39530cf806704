# Sourced on the GPU machine by the device scripts after unpack.sh: run_cuda_checks runs the
# ctest cases that TESTS (a regex) names and the CUDA cases of each program of MEMCHECK under
# compute-sanitizer memcheck, writing ctest.log and memcheck_<test>.log to $out.
run_cuda_checks() {
  if [[ -n "${TESTS:-}" ]]; then
    (cd build && timeout 200 ctest -j8 --timeout 150 --output-on-failure -R "$TESTS" > "$out/ctest.log" 2>&1)
    echo "ctest rc=$?"
    grep -E "tests passed|tests failed" "$out/ctest.log"
    grep -E "^\s+[0-9]+ - .*\((Failed|SEGFAULT|Timeout|Exception|Subprocess aborted)\)" "$out/ctest.log" | head -20
  fi
  for t in ${MEMCHECK:-}; do
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 20 "build/tests/$t" \
      --gtest_filter='*cuda*:*Cuda*' > "$out/memcheck_$t.log" 2>&1
    echo "$t memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$out/memcheck_$t.log")"
  done
}
