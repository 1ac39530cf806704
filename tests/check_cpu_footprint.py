"""A CPU-only start of wick stays small: neither libwick.so nor the wick program links a
CUDA library (the CUDA backend is the module libwick_cuda.so, loaded on first use), and
`wick --help` peaks under 40 MB of resident memory.

usage: check_cpu_footprint.py WICK_PROGRAM LIBWICK_SO
"""
import resource
import subprocess
import sys

CUDA_LIBRARIES = ("libcudart", "libcublas", "libcurand", "libnccl", "libcuda.so")
LIMIT_MB = 40


def main():
    wick, libwick = sys.argv[1], sys.argv[2]
    failed = False
    for binary in (wick, libwick):
        needed = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        linked = [line.strip() for line in needed.splitlines() if any(lib in line for lib in CUDA_LIBRARIES)]
        if linked:
            print(f"{binary} links CUDA libraries at load time: {linked}")
            failed = True
    subprocess.run([wick, "--help"], stdout=subprocess.DEVNULL, check=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # kB on Linux
    print(f"wick --help: peak resident memory {peak_mb:.1f} MB (limit {LIMIT_MB} MB)")
    if peak_mb >= LIMIT_MB:
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
