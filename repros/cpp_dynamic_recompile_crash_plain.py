"""max-autotune bmm with CPP choices, recompiled with dynamic shapes because the second call has other
strides: benchmarking the CPP choices gets symbolic strides (TypeError: as_strided(): argument 'stride'
must be tuple of ints; the fuzzer's harness saw ModuleNotFoundError: triton from the same step).

Not filed upstream yet; same root cause as cpp_bmm_dynamic_batch_stride_compile_error (CPP templates and
symbolic strides). Plain-torch repro by mm-autotune-fuzz: raises while the bug is present, prints a last
line once fixed. Fails on torch 2.13.0+cpu and 2.11 (CPU). Static shapes and ATEN alone compile fine.
"""
import torch

print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())
bmm = torch.compile(torch.bmm, mode="max-autotune")
with torch._inductor.config.patch(max_autotune_gemm_backends="ATEN,CPP"):
    bmm(torch.randn(2, 2, 2), torch.randn(2, 2, 2))
    bmm(torch.randn(2, 2, 2), torch.randn(2, 2, 2).transpose(1, 2))  # same shape, other strides
print("no failure: the bug does not reproduce on this torch")
