"""Inductor returns a bmm result whose rows are padded (strides (576, 36, 1)) where eager returns a
dense (2, 16, 35) tensor (strides (560, 35, 1)): shape padding (pad_mm) pads N to 36, slices the
result back, and the graph output is then a view, for which inductor keeps only the stride order.
Values are right; user code that relies on the eager strides (`.view(-1)`, data_ptr arithmetic,
custom kernels) breaks, although `keep_output_stride` promises eager's strides for outputs.

Found by mm-autotune-fuzz on an H200 with torch 2.11.0+cu130 (numerics oracle, output-strides;
visible only on the device: a copy to the CPU is dense again). Needs torch with CUDA.
Exit status 1 while the compiled strides differ from eager's.
"""
import sys

import torch
import torch._inductor.config as inductor_config


def f(a, b):
    return torch.bmm(a, b)


a = torch.randn(2, 16, 8399, device="cuda")
b = torch.randn(2, 8399, 35, device="cuda")
want = f(a, b).stride()
for shape_padding in (True, False):
    torch._dynamo.reset()
    with inductor_config.patch({"fx_graph_cache": False, "shape_padding": shape_padding}):
        got = torch.compile(f, mode="max-autotune")(a, b)
    print(f"torch {torch.__version__}, shape_padding={shape_padding}: compiled strides {got.stride()}, eager {want}")
    if shape_padding:
        bad = got.stride() != want
sys.exit(1 if bad else 0)
