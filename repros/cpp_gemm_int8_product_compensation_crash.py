"""Inductor max-autotune with CPP GEMM choices crashes lowering a plain int8 or uint8 bmm.

Found by this suite on torch 2.13.0+cpu (crash oracle, integer products): `use_cpp_gemm_template`
(torch/_inductor/utils.py) accepts int8/uint8 operands, which it means for the quantized linears
(their lowering registers the weight's compensation constant `<W>_BMatrixCompens`); a plain int8 or
uint8 bmm (or a frozen int8/uint8 addmm) gets the template as well, and lowering fails with
`KeyError: '<W>_BMatrixCompens'` in cpp_gemm_template.py. int16/int32/int64 bmm and ATEN alone
compile and match eager. Exit status: 1 while the bug is present, 0 once fixed. Needs only torch.
"""

import sys

import torch
import torch._inductor.config as inductor_config

broken = []
for dtype in (torch.int8, torch.uint8):
    a, b = torch.randint(0, 3, (2, 5, 7), dtype=dtype), torch.randint(0, 3, (2, 7, 3), dtype=dtype)
    torch._dynamo.reset()
    try:
        with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="ATEN,CPP", fx_graph_cache=False):
            got = torch.compile(torch.bmm)(a, b)
        if not torch.equal(got, torch.bmm(a, b)):
            broken.append(f"{dtype}: wrong values")
    except Exception as e:  # the bug: lowering raises
        inner = [ln.strip() for ln in str(e).splitlines() if "Error" in ln]
        broken.append(f"{dtype}: {(inner or [type(e).__name__])[0][:80]}")
verdict = "FIXED" if not broken else "BUG: " + "; ".join(broken)
print(f"{verdict} (CPU int8/uint8 bmm, ATEN,CPP, torch {torch.__version__})")
sys.exit(0 if not broken else 1)
