"""torch.compile (any mode) with freezing and cpp.enable_concat_linear of a module computing three
projections of one input, `torch.addmm(b_i, x, W_i, alpha=0.5)` for i = 1..3 (the QKV shape), W_i
and b_i frozen parameters: freezing_patterns.py's addmm_fuse_pattern_second fuses them into one
addmm over the concatenated weights and drops alpha (off by ~5; alpha = 1 passes). With 2-D biases
((1, N) or (M, N)) the same fusion concatenates them along dim 0 and the compile fails.

Plain-torch repro by mm-autotune-fuzz (found by reading that pattern; the suite's projections step
reaches it): an assertion fails while the bug is present, prints a last line once fixed. Fails on
torch 2.13.0+cpu.
"""
import torch
import torch._inductor.config


class QKV(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w = torch.nn.ParameterList([torch.nn.Parameter(torch.randint(-4, 5, (16, 8), generator=g).float(),
                                                            requires_grad=False) for _ in range(3)])
        self.b = torch.nn.ParameterList([torch.nn.Parameter(torch.randint(-4, 5, (8,), generator=g).float(),
                                                            requires_grad=False) for _ in range(3)])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(torch.addmm(b, x, w, alpha=0.5) for w, b in zip(self.w, self.b, strict=True))


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
x = torch.randint(-4, 5, (4, 16), generator=torch.Generator().manual_seed(1)).float()
model = QKV()
with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "cpp.enable_concat_linear": True}):
    got = torch.compile(model)(x)
err = max((g - w).abs().max().item() for g, w in zip(got, model(x), strict=True))
assert err < 1e-3, f"compiled differs from eager by up to {err}"
print("no failure: the bug does not reproduce on this torch")
