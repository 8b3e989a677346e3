"""A compiled program that writes its matmul into a buffer the caller passes (`out=`), the buffer
a view at a storage offset, and returns the first columns of the result (`y[..., :n]`, n from the
shape): with dynamic shapes the returned view sits at offset 0 of the buffer's storage, not at the
buffer's offset, so it reads the wrong elements (torch 2.13 CPU, 2.11 CPU and CUDA; any mode;
`out.copy_(x)` in place of the matmul too; aot_eager, a static size or `y[:3]` are right).

Plain-torch repro by mm-autotune-fuzz (found as tolerance:baddbmm:float32 and nonfinite:baddbmm:float32
with an out= buffer at offset 1, `dynamic=True`, two narrows): an assertion fails while the bug is
present, prints a last line once fixed.
"""
import torch


def program(a, b, out):
    y = torch.mm(a, b, out=out)
    return y[..., : (y.shape[-1] + 1) // 2]


print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
a, b = torch.randn(6, 4), torch.randn(4, 8)
storage = torch.zeros(1 + 6 * 8)
out = storage[1:].view(6, 8)  # the caller's buffer: a view at offset 1
got = torch.compile(program, dynamic=True)(a, b, out)
want = program(a, b, torch.zeros(1 + 6 * 8)[1:].view(6, 8))
assert got.storage_offset() == want.storage_offset(), \
    f"the returned view of out sits at offset {got.storage_offset()}, eager's at {want.storage_offset()}"
assert torch.equal(got, want), "the returned view holds other values than eager's"
print("no failure: the bug does not reproduce on this torch")
