"""The checks a plain repro script ends with, as source lines: against the float64 reference (bit
for bit, within a bound, NaN/inf placement) or eager (shapes, dtypes, strides)."""

from __future__ import annotations

from fuzz.export.plain_form import BOUND, EXACT, META, NONFINITE, STRIDES, VIEW
from fuzz.run import gradients, programs
from strategies.case import Case

__all__ = ["CHECKS", "check_lines"]

CHECKS = {
    EXACT: ["def check(got, args):  # exact-integer inputs: every product and partial sum is exact",
            "    for g, w in zip(got[:{results}], {ref_call}):",
            "        assert torch.equal(g.double(), w), "
            "f\"{{int((g.double() != w).sum())}} of {{w.numel()}} elements \"\\",
            "            f\"differ from the exact result: got {{g.flatten()[:4].tolist()}}, "
            "exact {{w.flatten()[:4].tolist()}}\""],
    BOUND: ["def check(got, args, f=torch.finfo(torch.{dtype})):  # against float64 (f: the op's dtype), within the "
            "worst case of float32 accumulation",
            "    for g, w, m in zip(got, {ref_call}, {mag_call}):",
            "        tol = {steps} * (({terms} + 2) * 2.0**-24 + f.eps) * m + f.tiny * f.eps  # float32 sums of "
            "{terms_text} terms + rounding to f, x{steps} for the steps",
            "        bad = int((~((g.double() - w).abs() <= tol) & (m <= f.max / 2)).sum())  "
            "# may overflow, NaN/inf: not judged",
            "        assert bad == 0, f\"{{bad}} of {{w.numel()}} elements are off by more than the bound\""],
    NONFINITE: ["def check(got, args, f=torch.finfo(torch.{dtype})):  "
                "# NaN and inf where float64 has them, nowhere else",
                "    for g, w, m in zip(got, {ref_call}, {mag_call}):",
                "        g, fits = g.double(), torch.isfinite(w) & (m <= f.max / 2)  # elsewhere a kernel may overflow",
                "        bad = int(((g.isnan() != w.isnan()) & (fits | ~torch.isfinite(w)) | w.isinf() & (g != w)"
                " | fits & g.isinf()).sum())",
                "        assert bad == 0, "
                "f\"{{bad}} of {{w.numel()}} elements have NaN/inf where float64 has not, or miss its own\""],
    STRIDES: ["def check(got, args):  # against eager: shapes, dtypes and the strides of dims longer than 1",
              "    for g, e in zip(got, {eager_call}):",
              "        assert (g.shape, g.dtype) == (e.shape, e.dtype), "
              "f\"{{g.shape}} {{g.dtype}} vs eager's {{e.shape}} {{e.dtype}}\"",
              "        used = [i for i, n in enumerate(e.shape) if n > 1]",
              "        assert [g.stride(i) for i in used] == [e.stride(i) for i in used], f\"strides {{g.stride()}} vs "
              "eager's {{e.stride()}}\""],
    VIEW: ["def check(got, args):  # against eager: an output that is a view of an input sits where eager's does",
           "    for g, e in zip(got, {eager_call}):",
           "        if any(e.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for a in args):",
           "            used = [i for i, n in enumerate(e.shape) if n > 1]",
           "            assert (g.storage_offset(), [g.stride(i) for i in used]) == (e.storage_offset(), "
           "[e.stride(i) for i in used]), f\"offset {{g.storage_offset()}} strides {{g.stride()}} vs eager's "
           "{{e.storage_offset()}} {{e.stride()}}\""],
    META: ["def check(got, args):  # against eager: shapes and dtypes",
           "    for g, e in zip(got, {eager_call}):",
           "        assert (g.shape, g.dtype) == (e.shape, e.dtype), f\"{{g.shape}} {{g.dtype}} vs eager's {{e.shape}} "
           "{{e.dtype}}\""],
}
"""The scripts' own checks. BOUND is simpler and looser than the suite's per-kernel bound
(oracles/error_model.py): the deterministic worst case of summing K products in float32, (K + 2) *
2^-24 per unit of magnitude, plus twice the rounding to the op's dtype and its underflow, x4 for the
steps after; no TF32 or fp8-accumulator terms. A training case's (Case.backward) checks run the
training step (`train`) on each side and judge its gradients too: their sums may run over any
tensor's elements, and each step rounds on the way back as well (fuzz.run.gradients). A finding
just past the suite's bound may pass it (the search then says the plain form did not fail).
Elements whose magnitude is NaN/inf (nonfinite inputs) or may overflow are not judged."""


def check_lines(case: Case, kind: str, ref: str, mag: str) -> list[str]:
    """The script's `check(got, args)` for `kind`, calling the program (eager), the reference and
    the magnitude program on float64 copies of `args`, each through `train` in a training case."""
    def called(fn: str, wide: str, magnitude: bool = False) -> str:
        if not case.backward:
            return f"{fn}(*{wide})"
        return f"train({fn}, {wide}, SEED{', magnitude=True' if magnitude else ''})"

    steps = gradients.roundings(case) if case.backward else 4
    fields = {"ref_call": called(ref, "[x.double() for x in args]"),
              "mag_call": called(mag, "[x.double().abs() for x in args]", True),
              "eager_call": called("program", "args"),
              "results": len(programs.output_labels(case)) - (len(case.inputs) if case.backward else 0),
              "dtype": programs.op_dtype(case), "steps": steps,
              "terms": "max(t.numel() for t in [*args, *got])" if case.backward else "args[0].shape[-1]",
              "terms_text": "up to any tensor's size of" if case.backward else "K"}
    return [ln.format(**fields) for ln in CHECKS[kind]]
