"""Inductor emits C++ that does not compile when the same fp16/bf16 bmm with M == 1 appears twice
in one graph on the CPU.

Found by this suite on torch 2.13.0+cpu (crash oracle, 10-minute CPU campaign: a bf16 matmul
(2, 2, 1, 15) @ (2, 15, 33) concatenated with x[..., :1, :] @ y, the same product). Inductor
decomposes a bmm with M == 1 into a reduction; the two identical reductions end up in one C++
kernel that declares its vector accumulator twice ("conflicting declaration 'auto
at_BFloat16_tmp_acc0_vec'"). float32 compiles; so do two different products, or M == 2; with or
without max-autotune. Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch


def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cat([a @ b, a @ b], dim=-2)


results = []
for dtype in (torch.bfloat16, torch.float16):
    a, b = torch.randn(2, 1, 15, dtype=dtype), torch.randn(2, 15, 33, dtype=dtype)
    torch._dynamo.reset()
    try:
        ok = torch.equal(torch.compile(f)(a, b), f(a, b))
        results.append(f"{dtype}: {'ok' if ok else 'WRONG RESULT'}")
    except Exception as e:  # the bug: CppCompileError (conflicting declaration)
        ok = False
        line = next((ln for ln in str(e).splitlines() if "error:" in ln), str(e).splitlines()[0])
        results.append(f"{dtype}: BUG {type(e).__name__}: {line.split('error:')[-1].strip()[:80]}")
    if not ok:
        break
fixed = all(r.endswith("ok") for r in results)
print(f"{'FIXED' if fixed else 'BUG'} (the same M == 1 bmm twice in one graph, torch {torch.__version__}): "
      + "; ".join(results))
sys.exit(0 if fixed else 1)
