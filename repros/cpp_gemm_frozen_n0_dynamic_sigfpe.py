"""Inductor max-autotune kills the process with SIGFPE while benchmarking the CPP GEMM template for a
frozen fp16 mm weight with no columns (N == 0) when M is dynamic (ATEN,CPP backends).

Found by mm-autotune-fuzz on torch 2.13.0+cpu (an AMD EPYC host without AVX-512, where fp16 linears
are not packed for oneDNN and stay mm): the CPP kernel of the symbolic-M recompile divides by the
zero number of N blocks at run time (with static shapes the same division is a constexpr and the C++
does not compile: cpp_gemm_frozen_n0_compile_error.py). CPP alone (one choice, no benchmark) passes.
The compile runs in a child process so that this script can give its verdict.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import signal
import subprocess
import sys

CHILD = """
import torch, torch._inductor.config as inductor_config
class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(16, 0, dtype=torch.float16), requires_grad=False)
    def forward(self, x):
        return torch.mm(x, self.weight)
model = Linear()
with torch.no_grad(), inductor_config.patch(freezing=True, fx_graph_cache=False, max_autotune=True,
                                            max_autotune_gemm_backends="ATEN,CPP"):
    got = torch.compile(model, dynamic=True)(torch.randn(8, 16, dtype=torch.float16))
raise SystemExit(0 if got.shape == (8, 0) else 3)
"""

import torch  # noqa: E402 - only for the version in the verdict

code = subprocess.run([sys.executable, "-c", CHILD], check=False, capture_output=True, text=True).returncode
verdict = "FIXED" if code == 0 else (
    "BUG: the compile died with SIGFPE" if code in (-signal.SIGFPE, 128 + signal.SIGFPE)
    else f"BUG: the compile ended with exit status {code}")
print(f"{verdict} (frozen float16 mm with N=0, dynamic M, ATEN,CPP, torch {torch.__version__})")
sys.exit(0 if code == 0 else 1)
