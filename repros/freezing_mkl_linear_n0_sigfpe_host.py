"""Which host conditions make freezing_mkl_linear_n0_sigfpe die: runs MKL's weight packing for an N == 0
weight (what freezing calls, torch.ops.mkl._mkl_reorder_linear_weight -> cblas_sgemm_pack) and the frozen
compile itself, each in a child process, over M, K, OpenMP threads and MKL's instruction set, and prints
the host (CPU model and flags, torch CPU capability, MKL version) with one line per run: ok or the signal.

Usage: python freezing_mkl_linear_n0_sigfpe_host.py   (about a minute; needs only torch with MKL)
"""
import os
import platform
import subprocess
import sys

import torch

PACK = """import sys, torch
m, k = int(sys.argv[1]), int(sys.argv[2])
w_t = torch.randn(0, k)  # the transposed (N, K) weight freezing packs, N = 0
packed = torch.ops.mkl._mkl_reorder_linear_weight(w_t, m)
torch.ops.mkl._mkl_linear(torch.randn(m, k), packed, w_t, None, m)
"""
COMPILE = """import sys, torch
class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(int(sys.argv[2]), 0), requires_grad=False)
    def forward(self, x):
        return torch.mm(x, self.weight)
with torch.no_grad(), torch._inductor.config.patch(freezing=True, fx_graph_cache=False):
    torch.compile(Linear())(torch.randn(int(sys.argv[1]), int(sys.argv[2])))
"""


def run(code: str, m: int, k: int, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code, str(m), str(k)], check=False, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600)
    if proc.returncode < 0:
        return f"DIES ({__import__('signal').Signals(-proc.returncode).name})"
    return "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1][:100]}"


cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
flags = next((ln.split(":", 1)[1].split() for ln in open("/proc/cpuinfo") if ln.startswith("flags")), [])
print(f"torch {torch.__version__} | CPU {cpu} ({os.cpu_count()} logical) | {platform.platform()}")
print("CPU capability", torch.backends.cpu.get_cpu_capability(), "| ISA flags",
      " ".join(sorted(f for f in flags if f.startswith(("avx512", "amx", "avx2", "avx_vnni")))))
print([ln.strip() for ln in torch.__config__.show().splitlines() if "Math Kernel Library" in ln])
print("has_mkl", torch._C.has_mkl, "| threads", torch.get_num_threads())
for threads in dict.fromkeys(("1", "2", str(os.cpu_count()))):
    for isa in ("", "AVX2"):
        env = {"OMP_NUM_THREADS": threads, **({"MKL_ENABLE_INSTRUCTIONS": isa} if isa else {})}
        for m, k in ((128, 4), (129, 4), (129, 1), (1024, 64)):
            print(f"pack    M={m:<5} K={k:<3} threads={threads:<4} MKL ISA={isa or 'default':<8}",
                  run(PACK, m, k, env), flush=True)
print("compile M=129   K=4   (default threads and ISA)      ", run(COMPILE, 129, 4, {}), flush=True)
