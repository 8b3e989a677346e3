"""With dynamic shapes, a compiled program that writes into a buffer the caller passes (`out=`, or
`buf.copy_(x)`), the buffer a view at a storage offset, and returns `buf[..., :n]` (n from the
shape) returns that view at offset 0 of the buffer's storage, not at the buffer's offset: it reads
other elements than eager's view. aot_eager, static shapes and `buf[:3]` are right.

Found by this suite on torch 2.13.0+cpu (numerics oracle, a 5-minute CPU campaign: an out= baddbmm);
also fails on torch 2.11 CPU and CUDA (H100). Exit status: 1 while the bug is present, 0 once fixed.
Needs only torch (on CPU; on CUDA too where there is a GPU).
"""

import sys

import torch


def with_out(a: torch.Tensor, b: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    y = torch.mm(a, b, out=buf)
    return y[..., : (y.shape[-1] + 1) // 2]


def with_copy(a: torch.Tensor, b: torch.Tensor, buf: torch.Tensor) -> torch.Tensor:
    buf.copy_(a @ b)
    return buf[..., : (buf.shape[-1] + 1) // 2]


broken = []
for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
    for program in (with_out, with_copy):
        torch._dynamo.reset()
        a, b = torch.randn(6, 4, device=device), torch.randn(4, 8, device=device)
        got = torch.compile(program, dynamic=True)(a, b, torch.zeros(1 + 6 * 8, device=device)[1:].view(6, 8))
        want = program(a, b, torch.zeros(1 + 6 * 8, device=device)[1:].view(6, 8))
        if got.storage_offset() != want.storage_offset() or not torch.equal(got, want):
            broken.append(f"{device} {program.__name__}: at offset {got.storage_offset()}, eager's at "
                          f"{want.storage_offset()}")
print(f"torch {torch.__version__}: " + ("BUG: " + "; ".join(broken) if broken else "FIXED"))
sys.exit(1 if broken else 0)
