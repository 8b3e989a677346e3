"""Inductor's cpp.weight_prepack is read once per process, at its first freezing compile.

Found by this suite on torch 2.13.0+cpu (a test that passed alone and failed after other cases in
one process): freezing_patterns.lazy_init registers the mkldnn/MKL weight packing patterns once
(init_once_fakemode), and only if cpp.weight_prepack is on at that moment; the patterns do not read
the config again. So weight_prepack=False is ignored after any frozen compile with the default,
and weight_prepack=True does nothing after a first frozen compile with False.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch (CPU build).
"""

import sys

import torch
from torch._inductor.utils import run_and_get_code

linear, x = torch.nn.Linear(16, 8).eval(), torch.randn(4, 16)


def packed(prepack: bool) -> bool:
    """Whether a frozen compile of the linear with this weight_prepack runs a packed linear."""
    torch._dynamo.reset()
    with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "fx_graph_cache": False,
                                                        "cpp.weight_prepack": prepack}):
        _, code = run_and_get_code(torch.compile(linear), x)
    return any(op in "\n".join(code) for op in ("mkl_linear", "_linear_pointwise"))


first, second = packed(True), packed(False)
broken = first and second
verdict = "BUG: weight_prepack=False still packs after a compile with it on" if broken else "FIXED"
print(f"{verdict} (first compile packed: {first}, second: {second}; torch {torch.__version__})")
sys.exit(1 if broken else 0)
