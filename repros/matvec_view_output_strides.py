"""Inductor returns a view of a batched matrix-vector product with other strides than eager.

Found by this suite on torch 2.13.0+cpu (numerics oracle, output-strides check; CI smoke campaign).
`torch.matmul(a, b)[..., 0, :]` with `a` (8, 63, 16) stored batch-inner (strides (16, 128, 1)) and
`b` (1, 16, 1): eager's result is a view with strides (63, 1), the compiled one (1, 1): the
product (N == 1, lowered as a reduction) keeps `a`'s batch-inner order and the returned view
inherits it. Values agree; N == 5 or a contiguous `a` give eager's strides. Any mode (max-autotune
or not) shows it.
NOT A BUG as it stands: inductor promises only the stride *order* of view outputs (torch/_inductor/graph.py:
views get `require_stride_order`, other outputs `require_exact_strides`); file it only with a user-visible
effect. Kept as an observation.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch


def first_row(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)[..., 0, :]


a = torch.as_strided(torch.randn(8 * 63 * 16 + 200), (8, 63, 16), (16, 128, 1))
b = torch.randn(1, 16, 1)
eager, compiled = first_row(a, b), torch.compile(first_row)(a, b)
ok = eager.stride() == compiled.stride() and torch.allclose(eager, compiled)
verdict = "FIXED" if ok else f"BUG: compiled strides {compiled.stride()}, eager {eager.stride()}"
print(f"{verdict} (view of a batch-inner matmul with N=1, torch {torch.__version__})")
sys.exit(0 if ok else 1)
