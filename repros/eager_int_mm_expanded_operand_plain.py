"""torch._int_mm on CPU returns garbage when an operand's leading dimension is shorter than its rows:
an expanded operand (stride 0), or a (1, K) view with strides (1, 1). Compiled code calling the extern
kernel inherits it.

pytorch/pytorch#195066 (fix: #194682, both open). Plain-torch repro by mm-autotune-fuzz: the assertion fails
while the bug is present, prints a last line once fixed. Host-dependent (oneDNN's int8 GEMM): failed on torch
2.13.0+cpu and 2.11 on the hosts that found it; passes on an AMD EPYC Zen 3 (AVX2), as #195066's own repro does.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
a = torch.tensor([[1, 2], [3, 4]], dtype=torch.int8)
b = torch.tensor([5, 6], dtype=torch.int8).expand(2, 2)  # strides (0, 1)
torch.testing.assert_close(torch._int_mm(a, b), (a.int() @ b.int()), rtol=0, atol=0)
row = torch.tensor([1, 2, 3], dtype=torch.int8).as_strided((1, 2), (1, 1))  # a valid view of [1, 2]
torch.testing.assert_close(torch._int_mm(row, a), (row.int() @ a.int()), rtol=0, atol=0)
print("no failure: the bug does not reproduce on this torch")
