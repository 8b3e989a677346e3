"""Freezing's concat-linear pattern (fx_passes/freezing_patterns.py: addmm_fuse_pattern_second; on
the CPU with cpp.enable_concat_linear, on CUDA always) fuses three addmm calls that share their input
into one addmm over the concatenated weights and `torch.cat((b1, b2, b3))` biases. It matches addmm
calls with alpha/beta too and drops them (wrong results), and it concatenates 2-D biases along dim 0,
so three linears with (1, N) or (M, N) biases fail to compile (a broadcast error in fake tensors).
This is the shape of a QKV projection written with three addmm calls.

Found by reading that pattern after the suite's decompose_mm_pass finding; checked on torch
2.13.0+cpu. Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config


class QKV(torch.nn.Module):
    def __init__(self, bias_shape: tuple[int, ...], alpha: float) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.ParameterList([torch.nn.Parameter(torch.randint(-4, 5, (16, 8), generator=g).float(),
                                                            requires_grad=False) for _ in range(3)])
        self.b = torch.nn.ParameterList([torch.nn.Parameter(torch.randint(-4, 5, bias_shape, generator=g).float(),
                                                            requires_grad=False) for _ in range(3)])
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(torch.addmm(b, x, w, alpha=self.alpha) for w, b in zip(self.w, self.b, strict=True))


x = torch.randint(-4, 5, (4, 16), generator=torch.Generator().manual_seed(1)).float()
wrong = []
CASES = (("alpha=0.5", (8,), 0.5), ("(1, N) biases", (1, 8), 1.0), ("(M, N) biases", (4, 8), 1.0))
for name, bias_shape, alpha in CASES:
    model = QKV(bias_shape, alpha)
    torch._dynamo.reset()
    try:
        with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "cpp.enable_concat_linear": True}):
            got = torch.compile(model)(x)
        ok = all(torch.allclose(g, w, atol=1e-3) for g, w in zip(got, model(x), strict=True))
        print(f"{name}: {'right values' if ok else 'WRONG values'}")
    except Exception as e:  # any failure to compile is the bug's
        ok = False
        print(f"{name}: compile failed ({type(e).__name__})")
    wrong += [] if ok else [name]
print(f"{'BUG' if wrong else 'FIXED'}: {', '.join(wrong) or 'none'} (torch {torch.__version__})")
sys.exit(1 if wrong else 0)
