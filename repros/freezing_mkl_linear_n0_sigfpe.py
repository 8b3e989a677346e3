"""Inductor freezing kills the process with SIGFPE on a float32 linear (mm with a constant weight)
whose weight has no columns (N == 0), once M > 128.

Found by this suite on torch 2.13.0+cpu (a campaign worker died with SIGFPE; the case compiled with
max-autotune, but freezing alone is enough). Freezing packs the float32 weight for MKL's linear;
with N == 0 an integer division by zero follows (M = 128 and K = 1 pass). Eager returns an empty
(129, 0) tensor. The compile runs in a child process so that this script can give its verdict.
Host condition unknown: it does not die on an AMD EPYC Zen 3 (AVX2, oneMKL 2024.2) with any M, K or thread
count tried, though freezing takes the MKL path there; likely an AVX-512 host (MKL picks its packing kernels
per ISA). freezing_mkl_linear_n0_sigfpe_host.py maps the condition on a host where it dies.
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
        self.weight = torch.nn.Parameter(torch.randn(4, 0), requires_grad=False)  # N = 0
    def forward(self, x):
        return torch.mm(x, self.weight)
model, x = Linear(), torch.randn(129, 4)
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
print(f"{verdict} (frozen float32 mm with N=0, M=129, torch {torch.__version__}, "
      f"CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(0 if ok else 1)
