"""max-autotune with freezing and the CPP GEMM template reads a frozen weight that is a view with a storage
offset from the start of its storage: wrong results. ATen gives the right answer.

Not filed upstream yet (related, closed: pytorch/pytorch#159233 "Fix double-offset issue in GEMM_TEMPLATE").
Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is present, prints a last line
once fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU).
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())


class Linear(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x):
        return torch.mm(x, self.weight)


weight = torch.arange(18.0)[1:].view(1, 17)  # a view at storage offset 1: values 1..17
x = torch.tensor([[2.0]])
with torch.no_grad(), torch._inductor.config.patch(freezing=True, max_autotune_gemm_backends="CPP"):
    got = torch.compile(Linear(weight), mode="max-autotune")(x)
want = x @ weight  # small integers: exact in float32
assert torch.equal(got, want), \
    f"got {got[0, :4].tolist()}..., expected {want[0, :4].tolist()}... (values from offset 0)"
print("no failure: the bug does not reproduce on this torch")
