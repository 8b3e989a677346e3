"""The text of a plain-torch repro script: the inputs built with plain torch calls (the very
storages the fuzzer built: its seeded values, NaN wherever no view reads, and the `nonfinite` mode's
NaN/inf at literal positions), the case's program, the compile its Form says, and then either the
exception propagating with its full traceback or an assertion on the values. It prints the versions
first."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import torch

from fuzz.export.plain_checks import check_lines
from fuzz.export.plain_form import BOUND, NONFINITE, RAISES, VALUE_CHECKS, Form, check_kind
from fuzz.run import gradients, programs
from fuzz.run.steps import CONSUMERS
from fuzz.run.values import (
    SCALE_EIGHTHS,
    exact_int_range,
    int8_range,
    integer_range,
    large_scale,
    mixed_exponents,
    scale_shape,
    storage_groups,
    storage_seed,
    storage_values,
    tiny_scale,
)
from strategies.case import Case, TensorSpec, contiguous_strides
from strategies.vocabulary import CAST_FROM, FUSED_THIRD, INT8_FORMS, INTEGER_DTYPES, UPCASTS


def _values(case: Case, spec: TensorSpec, index: int, size: tuple[int, ...]) -> str:
    """The float64 values fuzz.run.values draws for the storage of input `index` (the first of its
    group): the same generator, the same calls in the same order."""
    gen = f"torch.Generator().manual_seed({storage_seed(case, index)})"

    def masked(call: str, density: float) -> str:  # `call`'s values, each kept with probability `density`
        named = call.replace(f"generator={gen}", f"generator=(g := {gen})")  # the mask draws from it next
        return f"({named} * (torch.rand({size}, generator=g, dtype=torch.float64) < {density!r}))"

    if case.op == "scaled_mm" and index >= 2:
        return f"(2.0 ** torch.randint(-2, 3, {size}, generator={gen}, dtype=torch.float64))"
    if case.integer_product():
        low, high = integer_range(case)
        return f"torch.randint({low}, {high}, {size}, generator={gen}, dtype=torch.float64)"
    if case.value_mode == "exact_int":
        r, density = exact_int_range(case)
        ints = f"torch.randint({-r}, {r + 1}, {size}, generator={gen}, dtype=torch.float64)"
        return ints if density >= 1.0 else masked(ints, density)  # rand < 1 holds always: no mask needed
    if spec.dtype == "int8":
        low, high = int8_range(case)
        return f"torch.randint({low}, {high}, {size}, generator={gen}, dtype=torch.float64)"
    normal = f"torch.randn({size}, generator={gen}, dtype=torch.float64)"
    if case.value_mode == "sparse":
        return masked(normal, 0.1)
    if case.value_mode == "mixed":
        low, high = mixed_exponents(case)
        named = normal.replace(f"generator={gen}", f"generator=(g := {gen})")  # the exponents draw from it next
        return f"({named} * 2.0 ** torch.randint({low}, {high}, {size}, generator=g, dtype=torch.float64))"
    scale = {"large": large_scale, "tiny": tiny_scale}.get(case.value_mode)
    return f"({normal} * {scale(case)!r})" if scale else normal


def _draw(case: Case, spec: TensorSpec, index: int, size: tuple[int, ...], seeded: bool) -> str:
    """A fresh tensor of `size` and the input's dtype on the case's device: the values fuzz.run.values
    draws for input `index` (cast from float64), or plain random ones."""
    on = ', device="cuda"' if case.device == "cuda" else ""
    if not seeded:
        if case.op == "scaled_mm" and index >= 2:
            return f"torch.ones({size}{on})"
        if case.integer_product():
            low, high = integer_range(case)
            return f"torch.randint({low}, {high}, {size}, dtype=torch.{spec.dtype}{on})"
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


REFERENCE_OPS = ("int_mm", "scaled_mm", "mm_out_dtype")
"""Ops whose program cannot run on float64 inputs: the script gets a separate `reference` (as does
a program that upcasts x0 to float32)."""


def _versions_line(case: Case) -> str:
    if case.device == "cuda":
        return ('print("torch", torch.__version__, "| CUDA", torch.version.cuda, "| triton", triton.__version__, "|", '
                'torch.cuda.get_device_name())')
    return 'print("torch", torch.__version__, "| CPU capability", torch.backends.cpu.get_cpu_capability())'


def render(case: Case, violation: Mapping[str, str], form: Form, status: str = "") -> str:
    """The plain script for `case` in `form`. `status` (e.g. "Fails on torch 2.13.0+cpu") goes
    into its docstring."""
    kind = check_kind(violation)
    ref = "reference" if case.op in REFERENCE_OPS or set(case.prologue) & set(UPCASTS) else "program"
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
    own = any(v < 0 for v in case.params_dict.values()) or any(CONSUMERS[c].own_magnitude for c in case.consumers) \
        or "neg" in case.prologue  # the prologue's other steps keep |x0|
    if kind in (BOUND, NONFINITE) and own:  # else the reference on |inputs| is the magnitude
        lines += ["", *programs.source(case, magnitude=True).splitlines(), ""]
    if case.backward:
        lines += ["", f"SEED = {case.seed}  # the upstream gradients' generator", "", "", *gradients.TRAIN.splitlines(),
                  ""]
    if kind != RAISES:
        lines += ["", *check_lines(case, kind, ref, "magnitude" if own else ref), ""]
    if case.weight_form != "plain":  # frozen or not, the weights as a user's module holds them
        lines += ["", *_held_model(case)]
    elif form.frozen:
        n = len(case.inputs)
        weights = ", ".join(f"x{i}" for i in range(1, n))
        lines += ["", "class Model(torch.nn.Module):  # the weights are frozen (constant) parameters",
                  f"    def __init__(self, {weights}):", "        super().__init__()",
                  "        self.x1 = torch.nn.Parameter(x1, requires_grad=False)" if n == 2 else
                  f"        {', '.join(f'self.x{i}' for i in range(1, n))} = "
                  f"(torch.nn.Parameter(x, requires_grad=False) for x in ({weights}))", "",
                  "    def forward(self, x0):",
                  f"        return program(x0, {', '.join(f'self.x{i}' for i in range(1, n))})", ""]
    warm = case.warm_cache and not form.eager and _in_module(case, form)  # loaded from the cache: other weights
    sets = []  # (function prefix, the values' case, first call's storages, second call's)
    for prefix, values in (("make", case), *((("make_other", programs.warm_cache_values(case)),) if warm else ())):
        first = _storages(values, case.held(case.inputs), form.seeded)
        second = _storages(values, case.held(case.second_call), form.seeded) if case.second_call else []
        if _second_x0_only(case, form):
            second = [s for s in second if s.group == [0]]
        sets.append((prefix, values, first, second))
    helper = [s for s in sets[0][2] + sets[0][3] if s.nan_outside or s.nonfinite]  # other values: same layouts
    if helper:
        lines += ["", *_strided_helper(case, any(s.nonfinite for s in helper)), ""]
    second_lines: list[str] = []
    for prefix, values, first, second in sets:
        built = _build(values, case.held(case.inputs), first, form.seeded)
        lines += ["", *_make_inputs(f"{prefix}_inputs", built, len(case.inputs))]
        second_lines = _build(values, case.held(case.second_call), second, form.seeded)
        if case.second_call and not _second_x0_only(case, form):
            lines += ["", *_make_inputs(f"{prefix}_second_inputs", second_lines, len(case.second_call))]
    lines += ["", *_compile_and_call(case, form, kind, second_lines)]
    return "\n".join(lines) + "\n"


def _held_model(case: Case) -> list[str]:
    """The Model of a weight form: an int8 buffer (N, K) and its scale, or a fused parameter whose
    middle third is the weight (fuzz.run.programs.held_weights: NaN in the other thirds)."""
    n = len(case.inputs)
    rest = [f"        self.x{i} = torch.nn.Parameter(x{i}, requires_grad=False)" for i in range(2, n)]
    if case.weight_form in INT8_FORMS:
        gen = f"torch.Generator().manual_seed({storage_seed(case, n)})"
        scale = (f"torch.randint({-2 * SCALE_EIGHTHS}, {2 * SCALE_EIGHTHS + 1}, {scale_shape(case)}, generator={gen}, "
                 f"dtype=torch.float64) / {SCALE_EIGHTHS}")
        return ["class Model(torch.nn.Module):  # weight-only int8: the weight (out, in) and its scale, buffers",
                "    def __init__(self, x1):", "        super().__init__()",
                '        self.register_buffer("x1", x1.t())',
                f'        self.register_buffer("x2", ({scale}).to(torch.{case.inputs[0].dtype}))', "",
                "    def forward(self, x0):", "        return program(x0, self.x1, self.x2)", ""]
    if case.weight_form == "cast":
        weights = [f"x{i}" for i in range(1, n)]
        return [f"class Model(torch.nn.Module):  # {CAST_FROM} weights and input, math in {case.inputs[0].dtype} "
                "(what CPU autocast does)",
                f"    def __init__(self, {', '.join(weights)}):", "        super().__init__()",
                *(f"        self.{w} = torch.nn.Parameter({w}.to(torch.{CAST_FROM}), requires_grad=False)"
                  for w in weights), "",
                "    def forward(self, x0):",
                f"        return program(x0.to(torch.{case.inputs[0].dtype}), {', '.join(_weight_args(case, 'self'))})",
                ""]
    args = ", ".join(_weight_args(case, "self"))
    thirds = ["pad"] * 3
    thirds[FUSED_THIRD[case.weight_form]] = "x1"
    which = ("first", "middle")[FUSED_THIRD[case.weight_form]]
    return [f"class Model(torch.nn.Module):  # x1 is the {which} third of a fused (qkv-style) frozen parameter",
            f"    def __init__(self, {', '.join(f'x{i}' for i in range(1, n))}):", "        super().__init__()",
            "        pad = torch.full_like(x1, torch.nan)" if case.inputs[1].dtype not in INTEGER_DTYPES
            else "        pad = torch.full_like(x1, torch.iinfo(x1.dtype).max)",
            f"        self.fused = torch.nn.Parameter(torch.cat([{', '.join(thirds)}], dim=-1), requires_grad=False)",
            *rest, "", "    def forward(self, x0):", f"        return program(x0, {args})", ""]


def _held_args(case: Case) -> str:
    """The program's weight arguments, read from the module `model` (a weight form)."""
    return "[model.x1, model.x2]" if case.weight_form in INT8_FORMS else f"[{', '.join(_weight_args(case, 'model'))}]"


def _weight_args(case: Case, owner: str) -> list[str]:
    """The weights `owner` (a fused or cast form's Model) passes the program: the fused parameter's
    third (x1), then x2..; or each cast to the case's dtype."""
    if case.weight_form == "cast":
        return [f"{owner}.x{i}.to(torch.{t.dtype})" for i, t in enumerate(case.inputs[1:], 1)]
    n, third = case.inputs[1].shape[-1], FUSED_THIRD[case.weight_form]
    rest = (f"{owner}.x{i}" for i in range(2, len(case.inputs)))
    return [f"{owner}.fused[..., {third * n}:{(third + 1) * n}]", *rest]


def _second_x0_only(case: Case, form: Form) -> bool:
    """Whether the second call is written inline as a new x0: frozen weights stay in the module
    (the case's second call keeps them), and x0 may be passed to the check too: nothing mutates it."""
    return form.frozen and bool(case.second_call) and "mutate_input" not in case.consumers and \
        0 not in case.shared_storage


def _in_module(case: Case, form: Form) -> bool:
    """Whether the weights live in a Model the program is called through: frozen, or held in a weight form."""
    return form.frozen or case.weight_form != "plain"


def _marked_args(maker: str, marks: Sequence[tuple[int, int]], module: bool, cast: str) -> tuple[list[str], str]:
    """The lines that build a call's arguments from `maker` with the (input, dim) `marks` marked
    dynamic (x0's only where the weights live in a Model), and the expression to pass."""
    args = f"{maker}()[0]{cast}" if module else f"{maker}()"
    marks = [(i, d) for i, d in marks if not module or i == 0]
    if not marks:
        return [], args
    return [f"args = {args}", *(f"torch._dynamo.mark_dynamic(args{'' if module else f'[{i}]'}, {d})"
                                for i, d in marks)], "args"


def _compile_and_call(case: Case, form: Form, kind: str, second_lines: list[str]) -> list[str]:
    """Compile, then call with make_inputs() (and the second call's inputs: make_second_inputs(), or
    `second_lines` building a new x0 inline), each result checked or left to raise."""
    module = _in_module(case, form)
    target = "Model(*weights)" if module else "program"
    options = "".join([f', mode="{form.mode}"' if form.mode else "", ", dynamic=True" if case.dynamic else ""])
    lines = ["weights = make_inputs()[1:]"] if module else []
    if case.weight_form != "plain":  # the program's weight arguments, as the module holds them
        target, lines = "model", ["model = Model(*make_inputs()[1:])", f"weights = {_held_args(case)}"]
    lines.append(f"compiled = {target}  # eager: no compile" if form.eager else
                 f"compiled = torch.compile({target}{options})")
    patch = {**dict(form.patch), **({"freezing": True} if form.frozen else {})}
    contexts = (["torch.no_grad()"] if form.frozen else []) + \
        ([f"torch._inductor.config.patch({patch!r})"] if patch else [])
    cast = f".to(torch.{CAST_FROM})" if case.weight_form == "cast" else ""  # the Model casts it back
    body, makers = [], ("make_inputs", "make_second_inputs")
    if case.warm_cache and not form.eager:  # the checked program: the one loaded from the cache (frozen: other weights)
        fill, args = _marked_args("make_inputs", case.mark_dynamic, module, cast)  # as checked: one graph, one key
        fill.append(f"compiled({args if module else f'*{args}'})  # fills inductor's FX graph cache (on by default)")
        body += [*fill, "torch._dynamo.reset()"]
        if case.weight_form != "plain":
            body += ["model = Model(*make_other_inputs()[1:])  # another model of the same architecture",
                     f"weights = {_held_args(case)}"]
        elif module:
            body += ["weights = make_other_inputs()[1:]  # another model of the same architecture"]
        body += [f"compiled = torch.compile({target}{options})  # this one loads the graph from that cache"]
        makers = ("make_other_inputs", "make_other_second_inputs") if module else makers
    for maker, first in ((makers[0], True), (makers[1], False))[: 2 if case.second_call else 1]:
        marking, args = _marked_args(maker, case.mark_dynamic if first else (), module, cast)
        body += marking
        call = f"compiled({args})" if module else f"compiled(*{args})"
        if case.backward:  # every input is an argument (nothing frozen)
            call = f"train(compiled, {args}, SEED)"
        expected = f"[{maker}()[0], *weights]" if module else f"{maker}()"
        if not first and _second_x0_only(case, form):
            body += [second_lines[0] + "  # the second call: a new x0, the same frozen weights", *second_lines[1:]]
            call, expected = f"compiled(x0{cast})", "[x0, *weights]"
        body.append(call if kind == RAISES else f"check({call}, {expected})")
    if contexts:
        lines += [f"with {', '.join(contexts)}:", *(f"    {b}" for b in body)]
    else:
        lines += body
    return lines + ['print("no failure: the bug does not reproduce on this torch")']
