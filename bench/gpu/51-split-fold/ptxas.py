#!/usr/bin/env python3
"""Registers and stack of kernels.cu's entry points, compiled by NVRTC here (no GPU needed).

Usage: python3 ptxas.py KERNELS_CU "REDUCE_B(float, f32, 4) REDUCE_BP(float, f32, 4)" [sm_90]
NVRTC: the pip wheel nvidia-cuda-nvrtc-cu12 (`pip download --no-deps nvidia-cuda-nvrtc-cu12`,
unzipped); point NVRTC_LIB at its lib/libnvrtc.so.12. Run 51 used 12.9.86. The options are the
library's (`backend/cuda/nvrtc.rs`) plus ptxas's verbose report.
"""
import ctypes
import os
import sys

lib = ctypes.CDLL(os.environ.get("NVRTC_LIB", "libnvrtc.so.12"))
src = open(sys.argv[1]).read() + "\n" + sys.argv[2] + "\n"
arch = sys.argv[3] if len(sys.argv) > 3 else "sm_90"
prog = ctypes.c_void_p()
lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"collectives_kernels.cu", 0, None, None)
opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"--fmad=false", b"--ptxas-options=-v"]
rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
size = ctypes.c_size_t()
lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
log = ctypes.create_string_buffer(size.value)
lib.nvrtcGetProgramLog(prog, log)
entry = None
for line in log.value.decode().splitlines():
    if "Compiling entry function" in line:
        entry = line.split("'")[1]
    elif "Used" in line and entry:
        print(f"{entry:24} {line.split(':', 1)[1].strip()}")
    elif "error" in line:
        print(line)
sys.exit(rc)
