"""Inductor emits C++ that does not compile when the same fp16/bf16 bmm with M == 1 appears twice
in one graph on the CPU.

Found by this suite on torch 2.13.0+cpu (crash oracle, 10-minute CPU campaign: a bf16 matmul
(2, 2, 1, 15) @ (2, 15, 33) concatenated with x[..., :1, :] @ y, the same product). Inductor
decomposes a bmm with M == 1 into a reduction; the two identical reductions end up in one C++
kernel that declares its vector accumulator twice ("conflicting declaration 'auto
at_BFloat16_tmp_acc0_vec'"). float32 compiles; so do two different products, or M == 2; with or
without max-autotune. The same happens in training, no matmul needed: the backward of
x + b + c[:1, :] sums the gradient over the rows twice (for b and for c's first row; found as a
bf16 addmm with a row bias and x1's first row added, 5-minute noise campaign, seed 3).
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch


def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.cat([a @ b, a @ b], dim=-2)


def g(x: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return x + b + c[:1, :]


def forward(dtype: torch.dtype) -> bool:
    a, b = torch.randn(2, 1, 15, dtype=dtype), torch.randn(2, 15, 33, dtype=dtype)
    return torch.equal(torch.compile(f)(a, b), f(a, b))


def backward(dtype: torch.dtype) -> bool:
    args = [torch.randn(s, dtype=dtype, requires_grad=True) for s in ((36, 15), (15,), (36, 15))]
    torch.compile(g)(*args).sum().backward()
    return all(a.grad is not None for a in args)


results = []
for name, run in (("the product twice", forward), ("a training row sum twice", backward)):
    for dtype in (torch.bfloat16, torch.float16):
        torch._dynamo.reset()
        try:
            ok = run(dtype)
            results.append(f"{name}, {dtype}: {'ok' if ok else 'WRONG RESULT'}")
        except Exception as e:  # the bug: CppCompileError (conflicting declaration)
            ok = False
            line = next((ln for ln in str(e).splitlines() if "error:" in ln), str(e).splitlines()[0])
            results.append(f"{name}, {dtype}: BUG {type(e).__name__}: {line.split('error:')[-1].strip()[:80]}")
        if not ok:
            break
fixed = all(r.endswith("ok") for r in results)
print(f"{'FIXED' if fixed else 'BUG'} (two identical half-precision reductions in one graph, "
      f"torch {torch.__version__}): " + "; ".join(results))
sys.exit(0 if fixed else 1)
