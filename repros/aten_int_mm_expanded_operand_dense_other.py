"""ATen's CPU `torch._int_mm` with A of row stride 0 (an expanded row) is right while B is strided
and returns garbage once B is dense. Inductor copies B dense before it calls the extern kernel, so a
max-autotune program is wrong where eager (same inputs) is right: the ATen kernel's bug (the cause of
https://github.com/pytorch/pytorch/issues/195066), not inductor's.

Found by this suite's CPU campaign on torch 2.13.0+cpu (AMD EPYC Zen 5, AVX-512).
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch

torch.manual_seed(0)
a = torch.randint(-3, 4, (128,), dtype=torch.int8).as_strided((128, 128), (0, 1))
b = torch.randint(-3, 4, (128, 7), dtype=torch.int8)  # dense, as inductor hands it to the kernel
exact = a.long() @ b.long()
wrong = int((torch._int_mm(a, b).long() != exact).sum())
print(f"{'BUG' if wrong else 'FIXED'}: _int_mm of an expanded A and a dense B: {wrong} of {exact.numel()} elements "
      f"wrong (torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(1 if wrong else 0)
