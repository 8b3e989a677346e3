"""Plain-torch repro scripts: the program a PyTorch developer would write for a finding.

The vendored verdict script (fuzz/export/repro.py) runs the suite's own code and prints one line. This
one is what an upstream issue needs: the inputs built with plain torch calls (the very storages the
fuzzer built: its seeded values, NaN wherever no view reads, and the `nonfinite` mode's NaN/inf at
literal positions), the case's program, `torch.compile(..., mode="max-autotune")` or the smallest
`torch._inductor.config.patch` that still fails, and then either the exception propagating with
its full traceback or an assertion on the values. It prints the versions first.

`search` finds that form by running candidates in subprocesses: the plain form first, else the
case's config with keys dropped one at a time, then without freezing, and `max_autotune=True` spelt
as mode="max-autotune"; it keeps the smallest that
fails the same way (same exception type and innermost inductor frame, same signal, or a value
mismatch) and records which single changes make it pass (ATen only, no freezing, no
max-autotune, eager): the configuration difference an issue reports.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from fuzz.engine.children import REPO_ROOT, run_bounded
from fuzz.run import programs
from fuzz.run.values import exact_int_range, large_scale, storage_groups, storage_seed, storage_values
from strategies.backends import config_backends
from strategies.case import Case, TensorSpec, contiguous_strides

RAISES, EXACT, BOUND, NONFINITE, STRIDES, META = "raises", "exact", "bound", "nonfinite", "strides", "meta"
NUMERICS_CHECKS = {"exact-mismatch": EXACT, "tolerance": BOUND, "nonfinite": NONFINITE, "output-strides": STRIDES,
                   "output-meta": META}
VALUE_CHECKS = (EXACT, BOUND, NONFINITE)
"""The checks against the float64 reference (the others compare with eager)."""
MAX_AUTOTUNE_KEYS = ("max_autotune", "max_autotune_gemm")
FAMILY_BACKENDS = (("triton", "TRITON"), ("cpp", "CPP"), ("extern", "ATEN"), ("aten", "ATEN"))
"""Which backend alone serves a kernel-choice family (`ChoiceRecord.family`, lower-cased prefix)."""


class PlainReproError(Exception):
    """The finding has no user-visible symptom a plain script could show (e.g. a layout decision)."""


def check_kind(violation: Mapping[str, str]) -> str:
    """How the script shows the violation: let the exception (or death) happen, or assert on values."""
    oracle, signature = violation["oracle"], violation["signature"]
    if oracle in ("crash", "process") or signature.startswith(("choice-crash:", "dropped:")):
        return RAISES  # a dropped template raises once its backend alone serves the program
    kind = NUMERICS_CHECKS.get(signature.split(":")[0]) if oracle == "numerics" else None
    if kind is None:
        raise PlainReproError(f"{oracle} / {signature} is about inductor internals, not what the program returns")
    return kind


def family_backend(violation: Mapping[str, str]) -> str | None:
    """The backend that serves the kernel choice a single-choice signature names, e.g. "CPP"."""
    match = re.search(r"@([^:]+(?:::[^:]+)?)", violation["signature"])
    family = match.group(1).lower() if match else ""
    return next((backend for prefix, backend in FAMILY_BACKENDS if family.startswith(prefix)), None)


@dataclasses.dataclass(frozen=True)
class Form:
    """How the script compiles: torch.compile's mode, the inductor config keys it patches, whether
    the weights are frozen module parameters, whether inputs hold the fuzzer's seeded values (else
    plain `torch.randn`), or no compile at all (eager, to probe ATen)."""

    mode: str | None
    patch: tuple[tuple[str, Any], ...] = ()
    frozen: bool = False
    seeded: bool = True
    eager: bool = False

    @classmethod
    def make(cls, mode: str | None, patch: Mapping[str, Any], frozen: bool, seeded: bool = True) -> Form:
        return cls(mode, tuple(sorted(patch.items())), frozen, seeded)

    def replace(self, **changes: Any) -> Form:
        return dataclasses.replace(self, **changes)

    def without(self, key: str) -> Form:
        return self.replace(patch=tuple(kv for kv in self.patch if kv[0] != key))

    def with_key(self, key: str, value: Any) -> Form:
        return self.replace(patch=tuple(sorted({**dict(self.patch), key: value}.items())))

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"patch": dict(self.patch)}


# --- rendering --------------------------------------------------------------------------------------

def _values(case: Case, spec: TensorSpec, index: int, size: tuple[int, ...]) -> str:
    """The float64 values fuzz.run.values draws for the storage of input `index` (the first of its
    group): the same generator, the same calls in the same order."""
    gen = f"torch.Generator().manual_seed({storage_seed(case, index)})"

    def masked(call: str, density: float) -> str:  # `call`'s values, each kept with probability `density`
        named = call.replace(f"generator={gen}", f"generator=(g := {gen})")  # the mask draws from it next
        return f"({named} * (torch.rand({size}, generator=g, dtype=torch.float64) < {density!r}))"

    if case.op == "scaled_mm" and index >= 2:
        return f"(2.0 ** torch.randint(-2, 3, {size}, generator={gen}, dtype=torch.float64))"
    if case.value_mode == "exact_int" or spec.dtype == "int8":
        r, density = exact_int_range(case) if case.value_mode == "exact_int" else (8, 1.0)
        ints = f"torch.randint({-r}, {r + 1}, {size}, generator={gen}, dtype=torch.float64)"
        return ints if density >= 1.0 else masked(ints, density)  # rand < 1 holds always: no mask needed
    normal = f"torch.randn({size}, generator={gen}, dtype=torch.float64)"
    if case.value_mode == "sparse":
        return masked(normal, 0.1)
    return f"({normal} * {large_scale(case)!r})" if case.value_mode == "large" else normal


def _draw(case: Case, spec: TensorSpec, index: int, size: tuple[int, ...], seeded: bool) -> str:
    """A fresh tensor of `size` and the input's dtype on the case's device: the values fuzz.run.values
    draws for input `index` (cast from float64), or plain random ones."""
    on = ', device="cuda"' if case.device == "cuda" else ""
    if not seeded:
        if case.op == "scaled_mm" and index >= 2:
            return f"torch.ones({size}{on})"
        if spec.dtype == "int8":
            return f"torch.randint(-8, 9, {size}, dtype=torch.int8{on})"
        if spec.dtype.startswith("float8"):
            return f"torch.randn({size}{on}).to(torch.{spec.dtype})"
        return f"torch.randn({size}, dtype=torch.{spec.dtype}{on})"
    return _values(case, spec, index, size) + f".to(torch.{spec.dtype})" + (".cuda()" if case.device == "cuda" else "")


def _input(case: Case, spec: TensorSpec, index: int, seeded: bool) -> str:
    """Input `index` as an expression: a permuted or expanded fresh tensor where that gives the
    case's layout exactly, else a view `as_strided` of a fresh storage."""
    shape, stride = tuple(spec.shape), tuple(spec.stride)
    n = 1
    for d in shape:
        n *= d
    order = sorted(range(len(shape)), key=lambda i: -stride[i])
    base = tuple(shape[i] for i in order)
    if spec.offset == 0 and spec.storage_size() == n and \
            tuple(stride[i] for i in order) == contiguous_strides(base):
        perm = [order.index(i) for i in range(len(shape))]
        view = "" if perm == sorted(perm) else ".t()" if len(shape) == 2 else \
            ".transpose(-1, -2)" if perm == list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2] else \
            f".permute{tuple(perm)}"
        return _draw(case, spec, index, base, seeded) + view
    unexpanded = tuple(1 if s == 0 else d for d, s in zip(shape, stride, strict=True))
    if spec.offset == 0 and 0 in stride \
            and all(d > 1 if s == 0 else d for d, s in zip(shape, stride, strict=True)) and \
            stride == tuple(0 if s == 0 else c for s, c in zip(stride, contiguous_strides(unexpanded), strict=True)):
        return _draw(case, spec, index, unexpanded, seeded) + f".expand{shape}"
    return _draw(case, spec, index, (spec.storage_size(),), seeded) + f".as_strided({shape}, {stride}, {spec.offset})"


@dataclasses.dataclass(frozen=True)
class _Storage:
    """One storage of a call's inputs: the inputs that view it (one, or the shared ones), its size,
    and what fuzz.run.values puts into it besides the drawn values: NaN in the elements no view reads
    (floating dtypes), and in the `nonfinite` value mode NaN/inf at a few positions the views read."""

    group: list[int]
    size: int
    nan_outside: bool
    nonfinite: dict[int, float]


def _storages(case: Case, specs: tuple[TensorSpec, ...], seeded: bool) -> list[_Storage]:
    out = []
    for group in storage_groups(case, len(specs)):
        size = max(specs[i].storage_size() for i in group)
        if not seeded:  # plain random values: the layouts and aliasing alone
            out.append(_Storage(group, size, False, {}))
            continue
        values = storage_values(case, specs, group)
        read = torch.zeros(size, dtype=torch.bool)
        for i in group:
            read.as_strided(specs[i].shape, specs[i].stride, specs[i].offset).fill_(True)
        inside = (read & ~values.isfinite()).nonzero().flatten().tolist()  # drawn values are finite
        out.append(_Storage(group, size, bool(values[~read].isnan().any()), {i: float(values[i]) for i in inside}))
    return out


def _strided_helper(case: Case, nonfinite: bool) -> list[str]:
    """`strided(values, dtype, *views)`: the views of one storage holding the float64 `values`
    where a view reads, NaN elsewhere, cast to `dtype` (`nonfinite`: NaN/inf put in first)."""
    cuda = ".cuda()" if case.device == "cuda" else ""
    return [f"def strided(values, dtype, *views{', nonfinite={}' if nonfinite else ''}):  "
            "# views (shape, stride, offset) of one storage",
            *(["    values[list(nonfinite)] = torch.tensor(list(nonfinite.values()), dtype=torch.float64)  "
               "# NaN/inf at these positions"] if nonfinite else []),
            "    read = torch.cat([torch.arange(len(values)).as_strided(*view).flatten() for view in views])",
            f"    storage = torch.full_like(values, torch.nan).index_put((read,), values[read]).to(dtype){cuda}  "
            "# NaN where no view reads",
            "    return [storage.as_strided(*view) for view in views]"]


def _nonfinite_literal(value: float) -> str:
    return "torch.nan" if math.isnan(value) else "torch.inf" if value > 0 else "-torch.inf"


def _build(case: Case, specs: tuple[TensorSpec, ...], storages: list[_Storage], seeded: bool) -> list[str]:
    """Statements binding x0, x1, .. (the inputs of `storages`), one per storage: a fresh tensor
    where that gives the layout, else views of one storage."""
    lines = []
    for s in storages:
        first, dtype, names = s.group[0], specs[s.group[0]].dtype, ", ".join(f"x{i}" for i in s.group)
        if s.nan_outside or s.nonfinite:
            views = ", ".join(repr((tuple(specs[i].shape), tuple(specs[i].stride), specs[i].offset)) for i in s.group)
            nonfinite = ", ".join(f"{i}: {_nonfinite_literal(v)}" for i, v in s.nonfinite.items())
            lines.append(f"[{names}] = strided({_values(case, specs[first], first, (s.size,))}, torch.{dtype}, {views}"
                         + (f", nonfinite={{{nonfinite}}})" if nonfinite else ")"))
        elif len(s.group) == 1:
            lines.append(f"x{first} = {_input(case, specs[first], first, seeded)}")
        else:
            lines.append(f"shared = {_draw(case, specs[first], first, (s.size,), seeded)}  # {names} alias it")
            lines += [f"x{i} = shared.as_strided({tuple(specs[i].shape)}, {tuple(specs[i].stride)}, {specs[i].offset})"
                      for i in s.group]
    return lines


def _make_inputs(name: str, statements: list[str], n: int) -> list[str]:
    return [f"def {name}():", *(f"    {st}" for st in statements),
            f"    return [{', '.join(f'x{i}' for i in range(n))}]", ""]


_CHECKS = {
    EXACT: ["def check(got, args):  # exact-integer inputs: every product and partial sum is exact",
            "    for g, w in zip(got, {ref}(*[x.double() for x in args])):",
            "        assert torch.equal(g.double(), w), "
            "f\"{{int((g.double() != w).sum())}} of {{w.numel()}} elements \"\\",
            "            f\"differ from the exact result: got {{g.flatten()[:4].tolist()}}, "
            "exact {{w.flatten()[:4].tolist()}}\""],
    BOUND: ["def check(got, args, f=torch.finfo(torch.{dtype})):  # against float64 (f: the op's dtype), within the "
            "worst case of float32 accumulation",
            "    for g, w, m in zip(got, {ref}(*[x.double() for x in args]), "
            "{mag}(*[x.double().abs() for x in args])):",
            "        tol = 4 * ((args[0].shape[-1] + 2) * 2.0**-24 + f.eps) * m + f.tiny * f.eps  # float32 sums of K "
            "terms + rounding to f, x4 for the steps after",
            "        bad = int((~((g.double() - w).abs() <= tol) & (m <= f.max / 2)).sum())  "
            "# may overflow, NaN/inf: not judged",
            "        assert bad == 0, f\"{{bad}} of {{w.numel()}} elements are off by more than the bound\""],
    NONFINITE: ["def check(got, args, f=torch.finfo(torch.{dtype})):  "
                "# NaN and inf where float64 has them, nowhere else",
                "    for g, w, m in zip(got, {ref}(*[x.double() for x in args]), "
                "{mag}(*[x.double().abs() for x in args])):",
                "        g, fits = g.double(), torch.isfinite(w) & (m <= f.max / 2)  # elsewhere a kernel may overflow",
                "        bad = int(((g.isnan() != w.isnan()) & (fits | ~torch.isfinite(w)) | w.isinf() & (g != w)"
                " | fits & g.isinf()).sum())",
                "        assert bad == 0, "
                "f\"{{bad}} of {{w.numel()}} elements have NaN/inf where float64 has not, or miss its own\""],
    STRIDES: ["def check(got, args):  # against eager: shapes, dtypes and the strides of dims longer than 1",
              "    for g, e in zip(got, program(*args)):",
              "        assert (g.shape, g.dtype) == (e.shape, e.dtype), "
              "f\"{{g.shape}} {{g.dtype}} vs eager's {{e.shape}} {{e.dtype}}\"",
              "        used = [i for i, n in enumerate(e.shape) if n > 1]",
              "        assert [g.stride(i) for i in used] == [e.stride(i) for i in used], f\"strides {{g.stride()}} vs "
              "eager's {{e.stride()}}\""],
    META: ["def check(got, args):  # against eager: shapes and dtypes",
           "    for g, e in zip(got, program(*args)):",
           "        assert (g.shape, g.dtype) == (e.shape, e.dtype), f\"{{g.shape}} {{g.dtype}} vs eager's {{e.shape}} "
           "{{e.dtype}}\""],
}
"""The scripts' own checks. BOUND is simpler and looser than the suite's per-kernel bound
(oracles/error_model.py): the deterministic worst case of summing K products in float32, (K + 2) *
2^-24 per unit of magnitude, plus twice the rounding to the op's dtype and its underflow, x4 for the
steps after; no TF32 or fp8-accumulator terms. A finding just past the suite's bound may pass it
(the search then says the plain form did not fail). Elements whose magnitude is NaN/inf (nonfinite
inputs) or may overflow are not judged."""
REFERENCE_OPS = ("int_mm", "scaled_mm", "mm_out_dtype")
"""Ops whose program cannot run on float64 inputs: the script gets a separate `reference`."""


def _versions_line(case: Case) -> str:
    if case.device == "cuda":
        return ('print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| triton", triton.__version__, "|", '
                'torch.cuda.get_device_name())')
    return 'print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())'


def render(case: Case, violation: Mapping[str, str], form: Form, status: str = "") -> str:
    """The plain script for `case` in `form`. `status` (e.g. "Fails on torch 2.13.0+cpu") goes
    into its docstring."""
    kind = check_kind(violation)
    ref = "reference" if case.op in REFERENCE_OPS else "program"
    ending = "raises while the bug is present" if kind == RAISES else "an assertion fails while the bug is present"
    lines = ['"""' + f"{violation['oracle']} / {violation['signature']} (found by mm-autotune-fuzz)",
             violation["message"][:300],
             f"{status or 'Not verified yet'}: {ending}; prints a last line once it is fixed." + '"""',
             "import torch" + ("._inductor.config" if form.patch or form.frozen else ""),
             *(["import triton"] if case.device == "cuda" else []), "",
             _versions_line(case)]
    if case.tf32:
        lines.append("torch.backends.cuda.matmul.allow_tf32 = True")
    lines += ["", "", *programs.source(case).splitlines(), ""]
    if kind in VALUE_CHECKS and ref == "reference":
        lines += ["", *programs.source(case, reference=True).splitlines(), ""]
    signed = any(v < 0 for v in case.params_dict.values())  # else the reference on |inputs| is the magnitude
    if kind in (BOUND, NONFINITE) and signed:
        lines += ["", *programs.source(case, magnitude=True).splitlines(), ""]
    if kind != RAISES:
        lines += ["", *(ln.format(ref=ref, mag="magnitude" if signed else ref, dtype=programs.op_dtype(case))
                        for ln in _CHECKS[kind]), ""]
    if form.frozen:
        n = len(case.inputs)
        weights = ", ".join(f"x{i}" for i in range(1, n))
        lines += ["", "class Model(torch.nn.Module):  # the weights are frozen (constant) parameters",
                  f"    def __init__(self, {weights}):", "        super().__init__()",
                  "        self.x1 = torch.nn.Parameter(x1, requires_grad=False)" if n == 2 else
                  f"        {', '.join(f'self.x{i}' for i in range(1, n))} = "
                  f"(torch.nn.Parameter(x, requires_grad=False) for x in ({weights}))", "",
                  "    def forward(self, x0):",
                  f"        return program(x0, {', '.join(f'self.x{i}' for i in range(1, n))})", ""]
    first = _storages(case, case.inputs, form.seeded)
    second = _storages(case, case.second_call, form.seeded) if case.second_call else []
    if _second_x0_only(case, form):
        second = [s for s in second if s.group == [0]]
    helper = [s for s in first + second if s.nan_outside or s.nonfinite]
    if helper:
        lines += ["", *_strided_helper(case, any(s.nonfinite for s in helper)), ""]
    lines += ["", *_make_inputs("make_inputs", _build(case, case.inputs, first, form.seeded), len(case.inputs))]
    second_lines = _build(case, case.second_call, second, form.seeded)
    if case.second_call and not _second_x0_only(case, form):
        lines += ["", *_make_inputs("make_second_inputs", second_lines, len(case.second_call))]
    lines += ["", *_compile_and_call(case, form, kind, second_lines)]
    return "\n".join(lines) + "\n"


def _second_x0_only(case: Case, form: Form) -> bool:
    """Whether the second call is written inline as a new x0: frozen weights stay in the module
    (the case's second call keeps them), and x0 may be passed to the check too: nothing mutates it."""
    return form.frozen and bool(case.second_call) and "mutate_input" not in case.consumers and \
        0 not in case.shared_storage


def _compile_and_call(case: Case, form: Form, kind: str, second_lines: list[str]) -> list[str]:
    """Compile, then call with make_inputs() (and the second call's inputs: make_second_inputs(), or
    `second_lines` building a new x0 inline), each result checked or left to raise."""
    target = "Model(*weights)" if form.frozen else "program"
    options = "".join([f', mode="{form.mode}"' if form.mode else "", ", dynamic=True" if case.dynamic else ""])
    lines = ["weights = make_inputs()[1:]"] if form.frozen else []
    lines.append(f"compiled = {target}  # eager: no compile" if form.eager else
                 f"compiled = torch.compile({target}{options})")
    patch = {**dict(form.patch), **({"freezing": True} if form.frozen else {})}
    contexts = (["torch.no_grad()"] if form.frozen else []) + \
        ([f"torch._inductor.config.patch({patch!r})"] if patch else [])
    body = []
    for maker, first in (("make_inputs", True), ("make_second_inputs", False))[: 2 if case.second_call else 1]:
        marks = [(i, d) for i, d in case.mark_dynamic if first and (not form.frozen or i == 0)]
        args = f"{maker}()[0]" if form.frozen else f"{maker}()"
        if marks:
            body += [f"args = {args}", *(f"torch._dynamo.mark_dynamic(args{'' if form.frozen else f'[{i}]'}, {d})"
                                         for i, d in marks)]
            args = "args"
        call = f"compiled({args})" if form.frozen else f"compiled(*{args})"
        expected = f"[{maker}()[0], *weights]" if form.frozen else f"{maker}()"
        if not first and _second_x0_only(case, form):
            body += [second_lines[0] + "  # the second call: a new x0, the same frozen weights", *second_lines[1:]]
            call, expected = "compiled(x0)", "[x0, *weights]"
        body.append(call if kind == RAISES else f"check({call}, {expected})")
    if contexts:
        lines += [f"with {', '.join(contexts)}:", *(f"    {b}" for b in body)]
    else:
        lines += body
    return lines + ['print("no failure: the bug does not reproduce on this torch")']


# --- running ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Outcome:
    """How one run of a script ended."""

    status: str  # "passed", "raised", "mismatch" (its own assertion), "killed", "hang", or CUT
    type: str = ""  # exception type or signal name
    message: str = ""
    frame: str = ""  # innermost inductor frame, "file:function" (as in crash signatures)
    location: str = ""  # the same frame as "path:line"
    output: str = ""  # what it printed, traceback included

    def to_json(self) -> dict[str, str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "output"}


_PROBE = r'''
import json, runpy, sys, traceback
from fuzz.probe.failures import describe_failure, innermost_frame
result = {"status": "passed"}
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
except Exception as e:
    failure, fs = describe_failure(e), innermost_frame(e)
    mine = isinstance(e, AssertionError) and not failure.frame
    result = {"status": "mismatch" if mine else "raised", "type": failure.type, "message": failure.message,
              "frame": failure.frame, "location": f"{fs.filename}:{fs.lineno}" if fs else ""}
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != sys.argv[1]:
        tb = tb.tb_next  # the traceback `python script.py` prints: from the script's own frame on
    traceback.print_exception(type(e), e, tb)
with open(sys.argv[2], "w") as f:
    json.dump(result, f)
sys.exit(0 if result["status"] == "passed" else 1)
'''


CUT = "cut"
"""The status of a run stopped by the search's budget, not by its own timeout: no verdict."""


def run_script(path: Path, timeout_s: float, cancel: threading.Event | None = None) -> Outcome:
    """Run a script as `python script.py` would (fresh inductor caches), and say how it ended (at
    `timeout_s` it is killed, with the processes it started: a hang; once `cancel` is set: CUT)."""
    path = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-plain-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TORCHINDUCTOR_CACHE_DIR": f"{tmp}/inductor",
               "TRITON_CACHE_DIR": f"{tmp}/triton"}
        result = Path(tmp) / "result.json"
        code, output, _ = run_bounded([sys.executable, "-c", _PROBE, str(path), str(result)], cwd=tmp, env=env,
                                      timeout_s=timeout_s, cancel=cancel, merge_output=True)
        if code is None and cancel is not None and cancel.is_set():
            return Outcome(CUT, message="stopped: the campaign was stopped")
        if code is None:
            return Outcome("hang", message=f"no result within {timeout_s:g}s", output=output)
        if code < 0:
            return Outcome("killed", signal.Signals(-code).name, output=output)
        data = json.loads(result.read_text()) if result.is_file() else \
            {"status": "raised", "type": f"exit status {code}"}
        return Outcome(**data, output=output)


def same_failure(outcome: Outcome, violation: Mapping[str, str]) -> bool:
    """Whether `outcome` is the violation's failure: the same exception type and innermost inductor
    frame (crash), exception type (a single choice's crash), signal or hang (process), or a value
    mismatch (numerics)."""
    oracle, signature = violation["oracle"], violation["signature"]
    if oracle == "process":
        death = signature.split(":")
        return (outcome.status, outcome.type) == ("killed", death[1]) if death[0] == "killed" else \
            outcome.status == death[0]
    if oracle == "crash":
        return outcome.status == "raised" and \
            signature == f"crash:{outcome.type}:{outcome.frame or 'outside-inductor'}"
    if signature.startswith("choice-crash:"):
        return outcome.status == "raised" and outcome.type == signature.rsplit(":", 1)[1]
    if signature.startswith("dropped:"):  # the template's own failure, or no choice left to serve the program
        return outcome.status == "raised"
    return outcome.status == "mismatch"


# --- searching for the smallest failing form --------------------------------------------------------

TEMPLATE_BACKENDS = {"cpu": "CPP", "cuda": "TRITON"}
"""The code-generating backend a device autotunes against ATen: a wrong-values bug in one of its
kernels shows reliably only when it is the only backend (else the winner depends on timing)."""


@dataclasses.dataclass
class Search:
    """The smallest form found to fail the same way (or the case's own form when none did), what
    its runs did, and single changes with what each did."""

    form: Form
    outcome: Outcome | None
    reproduced: bool  # some run of `form` failed the same way
    confirmed: bool  # and a second run did too
    flips: list[tuple[str, Outcome]]
    runs: int
    seconds: float
    out_of_time: bool = False  # no form failed and one was left untried, or the second run was: the budget was spent


def _describe(form: Form, other: Form) -> str:
    """The change from `form` to `other`, in words (they differ in one respect)."""
    if other.eager:
        return "eagerly (no `torch.compile`)"
    if other.frozen != form.frozen:
        return "without freezing" if form.frozen else "with freezing"
    if other.mode != form.mode:
        return f'`torch.compile` without `mode="{form.mode}"`' if form.mode else f'`mode="{other.mode}"`'
    mine, theirs = dict(form.patch), dict(other.patch)
    changed = sorted(set(mine) ^ set(theirs) | {k for k in mine.keys() & theirs.keys() if mine[k] != theirs[k]})
    return ", ".join(f"without `{k}={mine[k]!r}`" if k not in theirs else f"`{k}={theirs[k]!r}`" for k in changed)


def _backends(form: Form) -> list[str]:
    return list(config_backends(dict(form.patch)))


def _autotuned(form: Form) -> bool:
    return form.mode == "max-autotune" or any(dict(form.patch).get(k) for k in MAX_AUTOTUNE_KEYS)


def _flip_forms(form: Form, kind: str) -> list[Form]:
    """One change at a time: each patched key dropped, ATen only, no max-autotune, no freezing, eager."""
    forms = [form.without(k) for k, _ in form.patch]
    if _autotuned(form) and _backends(form) != ["ATEN"]:
        forms.append(form.with_key("max_autotune_gemm_backends", "ATEN"))
    if form.mode:
        forms.append(form.replace(mode=None))
    if form.frozen:
        forms.append(form.replace(frozen=False))
    if kind != RAISES:
        forms.append(form.replace(eager=True))
    return list(dict.fromkeys(forms))


def search(case: Case, violation: Mapping[str, str], run: Callable[[Form], Outcome],
           budget_s: float = 600.0) -> Search:
    """The smallest form of `case` whose run fails as `violation` did, confirmed by a second run.
    `run` renders and runs a form; no new form is tried once `budget_s` is spent, and a run that
    `run` cut at the budget (status CUT) counts as untried. A crash is tried with plain random
    inputs first, a wrong value only with the fuzzer's."""
    began, tried, kind, untried = time.monotonic(), {}, check_kind(violation), []

    def timed_run(form: Form) -> Outcome | None:
        """`run(form)`, or None where the budget left no time to run it to the end."""
        ran = run(form) if time.monotonic() - began < budget_s else None
        if ran is None or ran.status == CUT:
            untried.append(form)
            return None
        return ran

    def outcome(form: Form) -> Outcome | None:
        if form not in tried and (ran := timed_run(form)) is not None:
            tried[form] = ran
        return tried.get(form)

    def fails(form: Form) -> bool:
        ran = outcome(form)
        return ran is not None and same_failure(ran, violation)

    family, template = family_backend(violation), TEMPLATE_BACKENDS[case.device]
    config = {**case.config_dict, **({"max_autotune_gemm_backends": family} if family else {})}
    mode = "max-autotune" if any(config.get(k) for k in MAX_AUTOTUNE_KEYS) else None
    backend = family or (template if kind in VALUE_CHECKS and mode else None)
    pin = {"max_autotune_gemm_backends": backend} if backend else {}
    found = None
    for seeded in (False, True) if kind == RAISES else (True,):
        plain = [Form.make(mode, {}, case.frozen_weights, seeded)] + \
            ([Form.make(mode, pin, case.frozen_weights, seeded)] if pin else [])
        found = next((f for f in plain if fails(f)), None)
        if found is None and fails(full := Form.make(None, config, case.frozen_weights, seeded)):
            found = full
            for key in sorted(config):
                if fails(found.without(key)):
                    found = found.without(key)
        if found is not None:
            break
    if found is not None and found.frozen and fails(found.replace(frozen=False)):
        found = found.replace(frozen=False)
    if found is not None and found.mode is None and dict(found.patch).get("max_autotune") and \
            fails(promoted := found.without("max_autotune").replace(mode="max-autotune")):
        found = promoted  # the spelling users write: torch.compile(..., mode="max-autotune")
    if found is not None and kind in VALUE_CHECKS and _autotuned(found) and len(_backends(found)) > 1 \
            and template in _backends(found) \
            and fails(pinned := found.with_key("max_autotune_gemm_backends", template)):
        found = pinned
    again = timed_run(found) if found is not None else None
    confirmed = again is not None and same_failure(again, violation)
    flips = [] if found is None else \
        [(_describe(found, f), ran) for f in _flip_forms(found, kind) if (ran := outcome(f)) is not None]
    form = found or Form.make(None, config, case.frozen_weights, seeded=True)
    return Search(form, tried.get(form), found is not None, confirmed, flips, len(tried) + (again is not None),
                  time.monotonic() - began,
                  out_of_time=bool(untried) if found is None else again is None)


# --- writing --------------------------------------------------------------------------------------------

def plain_path(vendored: str | os.PathLike[str]) -> Path:
    """Where the plain script of a vendored repro goes: beside it, `<name>_plain.py`."""
    path = Path(vendored)
    return path.with_name(path.stem + "_plain.py")


def write_plain_repro(case: Case, violation: Mapping[str, str], path: Path, *, verify: bool = True,
                      timeout_s: float = 600.0, budget_s: float = 600.0,
                      cancel: threading.Event | None = None) -> dict[str, Any]:
    """Write the plain script for `case` to `path` and what its run printed to `path`.log; with
    `verify`, search the smallest failing form first, within `budget_s` of wall time (a run still
    going then, or when `cancel` is set, is killed and counts as not run). Returns the record kept
    in the finding."""
    kind = check_kind(violation)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not verify:
        form = Form.make(None, case.config_dict, case.frozen_weights)
        path.write_text(render(case, violation, form), encoding="utf-8")
        return {"path": str(path), "verified": False, "form": form.to_json(), "check": kind}
    deadline = time.monotonic() + budget_s
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-forms-") as tmp:
        def run(form: Form) -> Outcome:
            candidate = Path(tmp, f"candidate_{len(os.listdir(tmp))}.py").resolve()
            candidate.write_text(render(case, violation, form), encoding="utf-8")
            left = deadline - time.monotonic()
            ran = run_script(candidate, min(timeout_s, left), cancel)
            if ran.status == "hang" and left < timeout_s:
                return Outcome(CUT, message=f"stopped: the {budget_s:g}s for the search were spent")
            return dataclasses.replace(ran, output=ran.output.replace(str(candidate), path.name))

        found = search(case, violation, run, budget_s)
    versions = f"torch {torch.__version__}"
    status = (f"Fails on {versions}" if found.confirmed else
              f"Failed once on {versions}; the time ran out before a second run" if found.reproduced and
              found.out_of_time else
              f"Failed in 1 of 2 runs on {versions} (autotuning picks its winner by timing)" if found.reproduced else
              f"Not yet run in a failing form on {versions}: the search's time ran out" if found.out_of_time else
              f"Did NOT fail in this form on {versions} (the fuzzer's own harness did)")
    path.write_text(render(case, violation, found.form, status), encoding="utf-8")
    log = path.with_suffix(".log")
    log.write_text(found.outcome.output if found.outcome else "", encoding="utf-8")
    return {"path": str(path), "log": str(log), "verified": True, "reproduced": found.reproduced,
            "confirmed": found.confirmed, "torch": torch.__version__, "form": found.form.to_json(), "check": kind,
            "outcome": found.outcome.to_json() if found.outcome else None,
            "flips": [{"change": change, **o.to_json()} for change, o in found.flips],
            "runs": found.runs, "seconds": round(found.seconds, 1), "out_of_time": found.out_of_time}


def plain_summary(plain: dict[str, Any]) -> str:
    """What a plain repro (its export record) does and how reliably, e.g. "raises `IndexError: ...`
    (every run)", or why there is none."""
    if plain.get("unsupported"):
        return f"none: {plain['unsupported']}"
    recorded = plain.get("outcome")
    outcome: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
    message = str(outcome.get("message"))[:200]  # a failed C++ compile's is its whole command line
    what = {"raised": f"raises `{outcome.get('type')}: {message}`", "mismatch": f"returns wrong results (`{message}`)",
            "killed": f"kills the process with {outcome.get('type')}", "hang": "hangs",
            "passed": "runs without error"}.get(outcome.get("status", ""), "was not run")
    how = ("every run" if plain.get("confirmed") else
           "one run: the time ran out before a second" if plain.get("reproduced") and plain.get("out_of_time") else
           "one of two runs: autotuning picks its winner by timing" if plain.get("reproduced") else
           "its search for a failing form ran out of time" if plain.get("out_of_time") else
           "the fuzzer's own harness failed on this case" if plain.get("verified") else "")
    return what + (f" ({how})" if how else "")


def write_environment(repro_dir: Path, timeout_s: float = 300.0) -> Path:
    """`python -m torch.utils.collect_env` (versions, OS, CPU model and flags, GPUs) into
    `repro_dir`/environment.txt, for the drafts of the repros verified here (killed at `timeout_s`)."""
    code, stdout, stderr = run_bounded([sys.executable, "-m", "torch.utils.collect_env"], cwd=os.getcwd(),
                                       env=os.environ, timeout_s=timeout_s)
    path = Path(repro_dir) / "environment.txt"
    text = stdout if code == 0 else f"collect_env did not finish within {timeout_s:.0f}s\n" if code is None else \
        f"collect_env failed: {stderr.strip()[-500:]}\n"
    path.write_text(text, encoding="utf-8")
    return path


def export_plain(case_json: Mapping[str, Any], violation: Mapping[str, str], vendored: str, root: Path, *,
                 verify: bool, timeout_s: float, environment: Path | None,
                 budget_s: float | None = None, cancel: threading.Event | None = None) -> dict[str, Any]:
    """The plain repro of an exported finding, written beside its vendored one (its search for
    failing forms ends by `budget_s`, default `timeout_s`, or once `cancel` is set); returns the
    record kept in the finding (paths relative to `root`, the campaign directory), or why there is none."""
    try:
        record = write_plain_repro(Case.from_json(case_json), violation, plain_path(vendored), verify=verify,
                                   timeout_s=timeout_s, budget_s=timeout_s if budget_s is None else budget_s,
                                   cancel=cancel)
    except PlainReproError as e:
        return {"unsupported": str(e)}
    if environment is not None:
        record["environment"] = str(environment)
    return {k: os.path.relpath(v, root) if k in ("path", "log", "environment") else v for k, v in record.items()}
