"""max-autotune bmm of two uint8 (or int8) tensors with CPP GEMM choices fails in lowering:
`KeyError: 'arg1_1_BMatrixCompens'`. The CPP GEMM template accepts int8/uint8 operands for the
quantized linears (whose lowering registers the weight's compensation constant) and looks that
constant up for a plain integer bmm too. Eager, ATEN alone and int16/int32/int64 are fine.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: raises while the bug is present,
prints a last line once fixed. Fails on torch 2.13.0+cpu.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
a = torch.randint(0, 3, (2, 5, 7), dtype=torch.uint8)
b = torch.randint(0, 3, (2, 7, 3), dtype=torch.uint8)
with torch._inductor.config.patch(max_autotune_gemm_backends="ATEN,CPP"):
    got = torch.compile(torch.bmm, mode="max-autotune")(a, b)
assert torch.equal(got, torch.bmm(a, b))
print("no failure: the bug does not reproduce on this torch")
