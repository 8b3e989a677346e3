"""torch.compile(mode="max-autotune") of a float32 bmm returns a result whose rows are padded (strides
(576, 36, 1)) where eager returns a dense (2, 16, 35) tensor (strides (560, 35, 1)): shape padding pads N
to 36 and slices the result back. Values are right; code that relies on eager's strides (`.view(-1)`,
data_ptr arithmetic, custom kernels) breaks, although `keep_output_stride` promises them.

Not filed upstream yet. Plain-torch repro by mm-autotune-fuzz: the assertion fails while the bug is present,
prints a last line once fixed. Failed on torch 2.11.0+cu130 (H200); only visible on the device (a copy to
the CPU is dense again). Needs torch with CUDA.
"""
import torch

print("torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name())
a = torch.randn(2, 16, 8399, device="cuda")
b = torch.randn(2, 8399, 35, device="cuda")
eager, got = torch.bmm(a, b), torch.compile(torch.bmm, mode="max-autotune")(a, b)
torch.testing.assert_close(got, eager)
assert got.stride() == eager.stride(), f"compiled strides {got.stride()}, eager {eager.stride()}"
print("no failure: the bug does not reproduce on this torch")
