"""torch.compile with freezing and enable_linear_binary_folding of a module computing
`x @ W + W[:1]`, W a frozen parameter and x batched (7, 226, 32): the folding inserts the new
bias above the weight slice it reads and the compile fails ("Node reshape_default referenced
nonexistent value slice_1"); a 2-D x compiles.

Plain-torch repro by mm-autotune-fuzz (found by a 5-minute CPU noise campaign, seed 5, as
crash:RuntimeError:constant_folding.py:run_node): the compile raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch
import torch._inductor.config


class Model(torch.nn.Module):
    def __init__(self, w: torch.Tensor) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(w, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w + self.w[:1, :]


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
g = torch.Generator().manual_seed(0)
x = torch.randint(-4, 5, (7, 226, 32), generator=g).float()
model = Model(torch.randint(-4, 5, (32, 80), generator=g).float())
with torch.no_grad():
    want = model(x)
    with torch._inductor.config.patch({"freezing": True, "enable_linear_binary_folding": True}):
        got = torch.compile(model)(x)
assert torch.equal(got, want), f"compiled differs from eager by up to {(got - want).abs().max().item()}"
print("no failure: the bug does not reproduce on this torch")
