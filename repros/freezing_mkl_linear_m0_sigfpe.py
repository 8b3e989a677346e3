"""Inductor freezing kills the process with SIGFPE on a float32 linear (mm with a constant (214, 255)
weight) called with an input of no rows (M == 0).

Found by this suite's CI on torch 2.13.0+cpu on an Intel Xeon with AVX-512 (its in-process test of the
CPP GEMM's M == 0 compile error died; any GEMM backend dies, max-autotune or not). Constant folding
packs the weight for MKL with batch size M: torch.ops.mkl._mkl_reorder_linear_weight(weight, 0) divides
by zero for larger weights ((K, N) = (214, 255), (200, 200), (4096, 8) die; (214, 128) passes). Eager
returns an empty (0, 255) tensor. Does not die on an AMD EPYC Zen 3 (AVX2). The compile runs in a child
process so that this script can give its verdict.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (x86 CPU build).
"""

import signal
import subprocess
import sys

CHILD = """
import torch, torch._inductor.config as inductor_config
class Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(214, 255), requires_grad=False)
    def forward(self, x):
        return torch.mm(x, self.weight)
model, x = Linear(), torch.randn(0, 214)  # M = 0
with torch.no_grad(), inductor_config.patch(freezing=True, fx_graph_cache=False):
    got = torch.compile(model)(x)
raise SystemExit(0 if torch.equal(got, model(x)) else 3)
"""

import torch  # noqa: E402 - only for the version in the verdict

code = subprocess.run([sys.executable, "-c", CHILD], check=False, capture_output=True, text=True).returncode
if code == 0:
    ok, verdict = True, "FIXED"
elif code in (-signal.SIGFPE, 128 + signal.SIGFPE):
    ok, verdict = False, "BUG: the compile died with SIGFPE"
else:
    ok, verdict = False, f"BUG: the compile ended with exit status {code}"
print(f"{verdict} (frozen float32 mm with M=0, K=214, N=255, torch {torch.__version__}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(0 if ok else 1)
