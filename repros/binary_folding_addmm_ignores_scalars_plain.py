"""torch.compile (any mode) with freezing and enable_linear_binary_folding of a module computing
`torch.addmm(b, x, W, beta=0.5, alpha=0.3) + W[:1]`, W and b frozen parameters: the add of a
constant taken from the weight is folded into the addmm as if beta = alpha = 1 (torch 2.13 CPU:
off by ~300; beta = alpha = 1 passes, and so does adding a tensor that is not the weight's).

Plain-torch repro by mm-autotune-fuzz (found by a 5-minute CPU campaign, seed 2, as
tolerance:addmm:float32 and float16): an assertion fails while the bug is present, prints a last
line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch
import torch._inductor.config


class Model(torch.nn.Module):
    def __init__(self, w: torch.Tensor, b: torch.Tensor) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(w, requires_grad=False)
        self.b = torch.nn.Parameter(b, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.b, x, self.w, beta=0.5, alpha=0.3) + self.w[:1]


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
g = torch.Generator().manual_seed(0)
x = torch.randint(-4, 5, (53, 257), generator=g).float()
model = Model(torch.randint(-4, 5, (257, 64), generator=g).float(), torch.tensor(3.0))
with torch.no_grad():
    want = model(x)
    with torch._inductor.config.patch({"freezing": True, "enable_linear_binary_folding": True}):
        got = torch.compile(model)(x)
err = (got - want).abs().max().item()
assert torch.allclose(got, want, atol=1e-3), f"compiled differs from eager by up to {err}"
print("no failure: the bug does not reproduce on this torch")
