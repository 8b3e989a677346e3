"""Freezing's linear binary folding breaks the graph of `x @ W + W[:1]` when x is batched.

Found by this suite on torch 2.13.0+cpu (crash oracle, a 5-minute CPU noise campaign, seed 5: a
frozen fp16 matmul (7, 226, 32) @ (32, 80) plus the weight's first row). With freezing and
enable_linear_binary_folding, the add of a weight-derived constant is folded into the linear's
bias; for a batched x the mm sits between two reshapes, and binary_folding.py's folded_op inserts
the new bias before the reshape, above the slice it reads: "Node reshape_default referenced
nonexistent value slice_1". A 2-D x compiles, and so does the batched x with the folding off.
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config as inductor_config


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 80), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w + self.w[:1, :]


inductor_config.freezing = True
inductor_config.enable_linear_binary_folding = True
model = Linear().eval()
results = []
for shape in ((226, 32), (7, 226, 32)):
    x = torch.randn(shape)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            ok = torch.allclose(torch.compile(model)(x), model(x), atol=1e-4)
        results.append(f"x {shape}: {'ok' if ok else 'WRONG RESULT'}")
    except Exception as e:  # the bug: the folded graph reads a node defined after it
        ok = False
        line = next((ln for ln in str(e).splitlines() if "nonexistent" in ln), str(e).splitlines()[0])
        results.append(f"x {shape}: BUG {line.strip()[:100]}")
fixed = all(r.endswith("ok") for r in results)
print(f"{'FIXED' if fixed else 'BUG'} (binary folding of x @ W + W[:1], torch {torch.__version__}): "
      + "; ".join(results))
sys.exit(0 if fixed else 1)
