"""ATen's CPU _int_mm with A of row stride 0 (an expanded row): right while B is strided, garbage
once B is dense, which is what inductor hands the extern kernel (it copies B first), so the
max-autotune program is wrong where eager is right. Raises AssertionError while the bug is present."""

import torch

print("torch", torch.__version__)
torch.manual_seed(0)
a = torch.randint(-3, 4, (128,), dtype=torch.int8).as_strided((128, 128), (0, 1))
b = torch.randint(-3, 4, (128, 28), dtype=torch.int8).as_strided((128, 7), (28, 2))
exact = a.long() @ b.long()
eager_wrong = int((torch._int_mm(a, b).long() != exact).sum())
dense_b_wrong = int((torch._int_mm(a, b.contiguous()).long() != exact).sum())
compiled = torch.compile(torch._int_mm, mode="max-autotune-no-cudagraphs")(a, b)
compiled_wrong = int((compiled.long() != exact).sum())
print(f"wrong elements of 896: eager {eager_wrong}, dense B {dense_b_wrong}, compiled {compiled_wrong}")
assert dense_b_wrong == 0 and compiled_wrong == 0, "ATen's _int_mm is wrong for an expanded A and a dense B"
