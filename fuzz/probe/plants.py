"""Planted bugs: named ways to break inductor in the current process, for the planted tests and for
`python -m fuzz bench --time-to-find` (fuzz/tools/time_to_find.py).

Each Plant monkeypatches inductor or its ATen extern kernels (`apply`, which returns the undo) and
says which findings it causes (`caused(oracle, signature)`). A campaign's workers and the naive
loop apply the plant named in the environment (`PLANT_ENV`) at start-up (`apply_from_env`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

from oracles.signature import VALUE_KINDS, Signature

PLANT_ENV = "MM_FUZZ_PLANT"
"""The environment variable naming the plant a worker (or the naive loop) applies at start-up."""
_MISSING = object()


class PlantError(ValueError):
    """An unknown plant name; the message is one line."""


class _Patches:
    """Attributes set on objects and items set in mappings, restored in reverse order by `undo`."""

    def __init__(self) -> None:
        self.undos: list[Callable[[], None]] = []

    def set(self, obj: Any, name: str, value: Any) -> None:
        old = vars(obj).get(name, _MISSING)
        self.undos.append(lambda: delattr(obj, name) if old is _MISSING else setattr(obj, name, old))
        setattr(obj, name, value)

    def set_item(self, mapping: Any, key: Any, value: Any) -> None:
        old = mapping[key]
        self.undos.append(lambda: mapping.__setitem__(key, old))
        mapping[key] = value

    def undo(self) -> None:
        while self.undos:
            self.undos.pop()()


@dataclasses.dataclass(frozen=True)
class Plant:
    """One planted bug: what it breaks, how to plant it, and which findings it causes."""

    name: str
    description: str
    plant: Callable[[_Patches], None]
    caused_by: Callable[[str, Signature], bool]

    def apply(self) -> Callable[[], None]:
        """Plant the bug in this process; returns the callable that removes it."""
        patches = _Patches()
        self.plant(patches)
        return patches.undo

    def caused(self, oracle: str, signature: str) -> bool:
        """Whether a finding (its oracle and signature) is one this plant causes."""
        return self.caused_by(oracle, Signature.parse(signature))


def _gate(always: bool) -> Callable[[_Patches], None]:
    def plant(p: _Patches) -> None:
        from torch._inductor.choices import InductorChoices

        p.set(InductorChoices, "_need_to_fix_layout", lambda self, choices, op: always)
    return plant


Kernel = Callable[..., Any]


def _extern(names: tuple[str, ...], wrap: Callable[[Kernel], Kernel]) -> Callable[[_Patches], None]:
    """Replace `extern_kernels.<name>` for each name by `wrap(the real kernel)`."""
    def plant(p: _Patches) -> None:
        from torch._inductor import select_algorithm

        for name in names:
            p.set(select_algorithm.extern_kernels, name, wrap(getattr(select_algorithm.extern_kernels, name)))
    return plant


def _wrong_for_m8(real: Kernel) -> Kernel:
    def mm(a: Any, b: Any, *, out: Any) -> Any:
        real(a, b, out=out)
        if a.shape[0] % 8 == 0 and out.numel():  # misbehaves only for M divisible by 8
            out[-1, -1] += 1
        return out
    return mm


def _wrong_in_backward(real: Kernel) -> Kernel:
    def mm(a: Any, b: Any, *, out: Any) -> Any:
        import torch

        real(a, b, out=out)
        if torch._C._current_autograd_node() is not None and out.numel():  # a compiled backward is running
            out[-1, -1] *= -1
        return out
    return mm


def _drop_first_term(real: Kernel) -> Kernel:
    def mm(a: Any, b: Any, *, out: Any) -> Any:
        return real(a[:, 1:], b[1:, :], out=out)
    return mm


def _transposed_out(real: Kernel) -> Kernel:
    def mm(a: Any, b: Any, *, out: Any) -> Any:
        out.as_strided_(out.shape, (1, out.shape[0]))  # writes a column-major result
        return real(a, b, out=out)
    return mm


def _literal_addmm(real: Kernel) -> Kernel:
    def addmm(bias: Any, a: Any, b: Any, *, alpha: float = 1, beta: float = 1, out: Any) -> Any:
        """addmm as the formula reads: beta * bias, even for beta == 0 (0 * NaN is NaN)."""
        import torch

        return out.copy_(beta * bias + alpha * torch.mm(a, b))
    return addmm


def _integer_through_float32(real: Kernel) -> Kernel:
    def kernel(*args: Any, out: Any, **scalars: Any) -> Any:
        """An integer product computed on float32 copies (rounded past 2**24), cast back."""
        import torch

        if out.dtype.is_floating_point:
            return real(*args, out=out, **scalars)
        result = torch.empty(out.shape, dtype=torch.float32)
        real(*(a.float() for a in args), out=result, **scalars)
        return out.copy_(result)
    return kernel


def _hashed_extern_mm(p: _Patches) -> None:
    from torch._inductor.kernel.mm import aten_mm

    p.set(aten_mm, "src_hash", "0" * 64)


def _bmm_lowering_raises(p: _Patches) -> None:
    from torch._inductor.choices import InductorChoices

    real = InductorChoices.get_template_configs

    def broken(self: Any, kernel_inputs: Any, templates: Any, op_name: str, kwarg_overrides: Any = None) -> Any:
        if op_name == "bmm":
            raise IndexError("planted")
        return real(self, kernel_inputs, templates, op_name, kwarg_overrides)

    p.set(InductorChoices, "get_template_configs", broken)


def _input_update_dropped(p: _Patches) -> None:
    from torch._inductor import ir, lowering

    real = lowering.mutate_to  # what the copy_ lowering (an input updated in place) calls

    def mutate_to(changed: Any, val: Any, unsafe_alias: bool = False) -> Any:
        data = changed.data if isinstance(changed, ir.TensorBox) else changed
        if isinstance(data, ir.StorageBox) and data.is_input_buffer():
            return changed  # the graph input keeps its old values
        return real(changed, val, unsafe_alias)

    p.set(lowering, "mutate_to", mutate_to)


def _view_passed_row_major(p: _Patches) -> None:
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    def codegen_reference(self: Any, writer: Any = None) -> str:  # the view's size with row-major strides
        return V.graph.wrapper_code.codegen_reinterpret_view(
            self.data, self.layout.size, ir.FlexibleLayout.contiguous_strides(self.layout.size), self.layout.offset,
            writer.writeline if writer is not None else V.graph.wrapper_code.writeline, dtype=self.layout.dtype)

    p.set(ir.ReinterpretView, "codegen_reference", codegen_reference)


def _upcast_reads_float16(p: _Patches) -> None:
    import torch
    from torch._inductor import lowering

    key = torch.ops.prims.convert_element_type.default
    real = lowering.lowerings[key]

    def convert_element_type(x: Any, dtype: torch.dtype) -> Any:
        if x.get_dtype() == torch.bfloat16 and dtype == torch.float32:  # the bf16 bits loaded as fp16
            x = lowering.to_dtype_bitcast(x, torch.float16)
        return real(x, dtype)

    p.set_item(lowering.lowerings, key, convert_element_type)


def _silent_selection_hook(p: _Patches) -> None:
    from torch._inductor import select_algorithm

    p.set(select_algorithm, "add_preprocessing_fn", lambda fn: None)


def _value(op: str | None = None, kinds: tuple[str, ...] = VALUE_KINDS) -> Callable[[str, Signature], bool]:
    """A wrong value eager does not share, of `op` (any op when None)."""
    return lambda oracle, s: (oracle == "numerics" and s.kind in kinds and not s.eager_agrees
                              and (op is None or s.subject[:1] == (op,)))


def _gradient(oracle: str, s: Signature) -> bool:
    """A wrong gradient (a training case's `OP.grad` output) eager does not share."""
    return _value()(oracle, s) and s.op.endswith(".grad")


PLANTS: dict[str, Plant] = {p.name: p for p in (
    Plant("gate-never-fixes", "the layout gate (_need_to_fix_layout) never fixes a layout",
          _gate(False), lambda oracle, s: oracle == "layout_spec" and s.kind == "flexible-when-gated"),
    Plant("gate-always-fixes", "the layout gate fixes every layout, even where flexible ones are allowed",
          _gate(True), lambda oracle, s: oracle == "layout_spec" and s.kind == "fixed-when-allowed"),
    Plant("mm-wrong-for-m8", "extern mm adds 1 to its last element when M is a multiple of 8",
          _extern(("mm",), _wrong_for_m8), _value()),
    Plant("mm-wrong-in-backward", "extern mm negates its last element while a compiled backward pass runs",
          _extern(("mm",), _wrong_in_backward), _gradient),
    Plant("mm-drops-a-k-term", "extern mm leaves out the first term of every dot product",
          _extern(("mm",), _drop_first_term), _value()),
    Plant("mm-transposed-output", "extern mm writes a column-major result into a row-major output",
          _extern(("mm",), _transposed_out),  # wrong strides, and wrong values where a later kernel reads it
          _value(kinds=(*VALUE_KINDS, "output-strides", "output-stride-order"))),
    Plant("mm-extern-hashed", "the ATen mm choice claims a src_hash (extern choices must have none)",
          _hashed_extern_mm, lambda oracle, s: oracle == "src_hash" and s.kind == "extern-hash"),
    Plant("addmm-beta-zero-bias", "extern addmm multiplies the bias by beta = 0, so NaN in it leaks",
          _extern(("addmm", "bias_addmm"), _literal_addmm), _value("addmm", ("nonfinite",))),
    Plant("integer-product-through-float32", "extern mm/bmm/addmm/baddbmm compute an integer product in float32 "
          "(exact below 2**24 only)",
          _extern(("mm", "bmm", "addmm", "bias_addmm", "baddbmm"), _integer_through_float32), _value()),
    Plant("input-update-dropped", "an input the program updates in place (an out= buffer, x.mul_()) keeps its "
          "old values", _input_update_dropped, _value()),
    Plant("view-passed-row-major", "a kernel gets a strided view of a computed buffer (a transposed activation "
          "copy) with row-major strides", _view_passed_row_major, _value()),
    Plant("upcast-reads-float16", "a bfloat16 -> float32 cast loads the bfloat16 bits as float16 (a load of the "
          "wrong narrow type)", _upcast_reads_float16, _value()),
    Plant("selection-hook-silent", "autotuning's preprocessing hook drops what is registered (no choice recorded)",
          _silent_selection_hook, lambda oracle, s: oracle == "observed" and s.kind == "unselected"),
    Plant("bmm-lowering-raises", "bmm's lowering raises IndexError while gathering its choices",
          _bmm_lowering_raises, lambda oracle, s: oracle == "crash" and s.subject[:1] == ("IndexError",)),
)}


def plant_named(name: str) -> Plant:
    """The plant called `name`; PlantError (one line) for an unknown one."""
    if name not in PLANTS:
        raise PlantError(f"unknown plant {name!r} (known: {', '.join(PLANTS)})")
    return PLANTS[name]


def apply_from_env() -> Plant | None:
    """Plant the bug `PLANT_ENV` names, if any, for the rest of this process."""
    name = os.environ.get(PLANT_ENV)
    if not name:
        return None
    plant = plant_named(name)
    plant.apply()
    return plant
