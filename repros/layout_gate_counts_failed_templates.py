"""Inductor keeps a FixedLayout for a max-autotune bmm whose only surviving choices are extern
(ATen) kernels, although `max_autotune_allow_flexible_layouts` allows a FlexibleLayout then
(a missed optimization, not a wrong result).

Found by this suite on an H200 with torch 2.11.0+cu130 / triton 3.6.0 (layout spec oracle): bmm
or baddbmm with M == 0 (or N == 0) and backends ATEN,TRITON. `InductorChoices.get_template_configs`
asks `_need_to_fix_layout` about the candidates before they are built; the Triton candidates are
counted as templates, then fail to build (`choice_or_none` -> None) and are dropped, so the ATen
choice that is left was given a fixed layout. A 2-D mm of the same shapes is unaffected (its
lowering leaves Triton out for empty M or N), but a 2-D mm with K == 0 is: `python
layout_gate_counts_failed_templates.py 64 32 mm 0`. The same gate code is in torch 2.13's choices.py.
NOT WORTH FILING as it stands: it only bites with empty dimensions (M, N or K == 0), where the layout
hardly matters. Kept as an observation.
Usage: python layout_gate_counts_failed_templates.py [M N [mm [K]]]  (mm: a 2-D mm instead of bmm; K: 16)
Exit status: 1 while the bug is present, 0 once fixed. Needs only torch with CUDA (and triton).
"""

import sys

import torch
import torch._inductor.config as inductor_config
from torch._inductor.ir import FlexibleLayout
from torch._inductor.virtualized import V

M, N = (int(v) for v in (sys.argv[1:3] or (0, 16)))
OP = sys.argv[3] if len(sys.argv) > 3 else "bmm"
K = int(sys.argv[4]) if len(sys.argv) > 4 else 16
BATCH = () if OP == "mm" else (2,)
seen: list[tuple[str, bool]] = []  # (kind of each choice, whether its layout is flexible)


class Recording(type(V.choices)):  # the choices handler inductor is using, plus a record
    def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        out = super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)
        seen.extend((type(c).__name__, isinstance(c.layout, FlexibleLayout)) for c in out)
        return out


x = torch.randn(*BATCH, M, K, device="cuda", dtype=torch.float16)
w = torch.randn(*BATCH, K, N, device="cuda", dtype=torch.float16)
with V.set_choices_handler(Recording()), inductor_config.patch(
        max_autotune=True, max_autotune_gemm_backends="ATEN,TRITON", max_autotune_allow_flexible_layouts=True,
        fx_graph_cache=False):
    torch.compile(getattr(torch, OP))(x, w)
extern_only = bool(seen) and all(kind == "ExternKernelCaller" for kind, _ in seen)
ok = not extern_only or all(flexible for _, flexible in seen)
verdict = "FIXED" if ok else "BUG: every choice is extern, yet the layout is fixed"
print(f"{verdict} ({OP} M={M} K={K} N={N} fp16, ATEN,TRITON, choices {seen}, torch {torch.__version__})")
sys.exit(0 if ok else 1)
