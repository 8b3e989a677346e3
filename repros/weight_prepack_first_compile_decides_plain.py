"""torch._inductor.config.cpp.weight_prepack = False is ignored once the process has compiled a frozen
model with the default (True): freezing_patterns.lazy_init registers the weight packing patterns once
per process, at the first freezing compile, and only if weight_prepack is on then; the patterns never
read the config again (and the reverse: False first, then True never packs).

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: fails an assertion while the bug is
present, prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
linear, x = torch.nn.Linear(16, 8).eval(), torch.randn(4, 16)
with torch.no_grad(), torch._inductor.config.patch(freezing=True):
    torch.compile(linear)(x)  # the default: weight_prepack=True packs the weight
torch._dynamo.reset()
with torch.no_grad(), torch._inductor.config.patch({"freezing": True, "cpp.weight_prepack": False}):
    _, code = torch._inductor.utils.run_and_get_code(torch.compile(linear), x)  # imported by the first compile
assert "mkl_linear" not in "\n".join(code), "weight_prepack=False, and the weight is still packed for MKL"
print("no failure: the bug does not reproduce on this torch")
