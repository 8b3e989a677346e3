"""Eager `torch._int_mm` on the CPU returns garbage when an operand's leading dimension is
shorter than its rows: an expanded operand (stride 0), or a (1, K) view with strides (1, 1).

Found by this suite on torch 2.13.0+cpu while checking inductor (the compiled result was the
exact one; eager was not). Not an inductor bug: the suite's exact-integer oracle judges compiled
code against the exact result, not against eager, so this does not hide inductor bugs.
Tracked upstream: https://github.com/pytorch/pytorch/issues/195066 (open; fix PR #194682 open).
Host-dependent (oneDNN's int8 GEMM): it passes on an AMD EPYC Zen 3 (AVX2), as #195066's own repro does.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch

a = torch.tensor([[1, 2], [3, 4]], dtype=torch.int8)
b = torch.tensor([5, 6], dtype=torch.int8).expand(2, 2)  # stride (0, 1)
got, exact = torch._int_mm(a, b), a.long() @ b.long()
row = torch.as_strided(torch.tensor([1, 2, 3], dtype=torch.int8), (1, 2), (1, 1))  # a valid view of [1, 2]
ok = torch.equal(got.long(), exact) and torch.equal(torch._int_mm(row, a).long(), row.long() @ a.long())
print(f"{'FIXED' if ok else 'BUG'}: _int_mm with an expanded operand gave {got.tolist()}, exact {exact.tolist()} "
      f"(torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()})")
sys.exit(0 if ok else 1)
