"""ATen CPU `baddbmm` in bfloat16/float16 with alpha == 0 and beta == 0 returns uninitialized
memory instead of zeros (eager, and compiled code that calls the extern kernel).

Found by this suite's campaign on torch 2.13.0+cpu (numerics oracle, exact-integer case).
Not an inductor bug: inductor's extern baddbmm inherits it. Host condition: bf16 baddbmm takes oneDNN's
matmul only where torch.ops.mkldnn._is_mkldnn_bf16_supported() (AVX-512 class x86); elsewhere (e.g. an AMD
EPYC Zen 3, AVX2) ATen's own kernel returns zeros and this prints FIXED.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch

bad = 0
for _ in range(20):  # garbage depends on what the allocator hands back
    a, b = torch.ones(2, 1, 128, dtype=torch.bfloat16), torch.ones(2, 128, 48, dtype=torch.bfloat16)
    out = torch.baddbmm(torch.ones(48, dtype=torch.bfloat16), a, b, alpha=0.0, beta=0.0)
    bad += int(torch.count_nonzero(out))
print(f"{'BUG' if bad else 'FIXED'}: baddbmm(alpha=0, beta=0) bf16 gave {bad} non-zero element(s) over 20 calls "
      f"(torch {torch.__version__}, oneDNN bf16 matmul: {torch.ops.mkldnn._is_mkldnn_bf16_supported()})")
sys.exit(1 if bad else 0)
