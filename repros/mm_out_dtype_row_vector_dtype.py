"""Inductor returns the input dtype (bf16) instead of float32 for `torch.mm(a, b, out_dtype=torch.float32)`
when the product has a single row (M == 1) and coordinate-descent tuning is on (as in
mode="max-autotune"): eager returns float32.

Found by mm-autotune-fuzz on an H200 with torch 2.11.0+cu130 (numerics oracle, output-meta):
mm_out_dtype, a (1, 2112) x (2112, 20) bf16, max_autotune_gemm + coordinate_descent_tuning,
dynamic=True. The script prints each variant and exits 1 while the plain max-autotune compile
returns the wrong dtype. Needs torch with CUDA.
"""
import sys

import torch
import torch._inductor.config as inductor_config


def f(a, b):
    return torch.mm(a, b, out_dtype=torch.float32)


a = torch.randn(1, 2112, device="cuda", dtype=torch.bfloat16)
b = torch.randn(2112, 20, device="cuda", dtype=torch.bfloat16)
print(f"torch {torch.__version__}, eager dtype {f(a, b).dtype}")
results = {}
for name, dynamic, patch in [("mode=max-autotune", None, {}),
                             ("coordinate_descent_tuning only", None, {"coordinate_descent_tuning": True}),
                             ("coordinate_descent_tuning, dynamic=True", True, {"coordinate_descent_tuning": True}),
                             ("neither", None, {"coordinate_descent_tuning": False})]:
    torch._dynamo.reset()
    with inductor_config.patch({"fx_graph_cache": False, **patch}):
        fn = torch.compile(f, mode="max-autotune" if name.startswith("mode") else None, dynamic=dynamic)
        results[name] = fn(a, b).dtype
    print(f"{name}: compiled dtype {results[name]}")
sys.exit(1 if results["mode=max-autotune"] != torch.float32 else 0)
