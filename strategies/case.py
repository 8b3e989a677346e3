"""The Case: a frozen, JSON-serializable description of one test.

Everything else (pytest, campaigns, repro export, the findings store) speaks Case.
`Case.from_json(case.to_json()) == case` holds exactly.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from strategies.vocabulary import (
    BACKWARD_STEPS,
    BACKWARD_VALUE_MODES,
    CAST_DTYPES,
    CONSUMERS,
    DEVICES,
    DTYPES,
    FLOAT_PRODUCT_OPS,
    FUSED_THIRD,
    INPUT_COUNT,
    INT8_FORMS,
    INTEGER_DTYPES,
    INTEGER_STEPS,
    INTEGER_VALUE_MODES,
    OPS,
    PARAM_KEYS,
    PROJECTION_OPS,
    PROLOGUE_OPS,
    PROLOGUE_STEPS,
    RESULT_MUTATING_STEPS,
    SCALAR_SPELLINGS,
    SPELLINGS,
    UPCASTS,
    VALUE_MODES,
    WEIGHT_FORMS,
    WEIGHT_READING_STEPS,
)


class CaseError(ValueError):
    """A Case (or its JSON) that does not describe a runnable test; the message is one line."""


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One input: a view `as_strided(shape, stride, offset)` over a fresh storage of `dtype`."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise CaseError(f"unsupported dtype {self.dtype!r}; known: {', '.join(DTYPES)}")
        if len(self.shape) != len(self.stride):
            raise CaseError(f"shape {self.shape} and stride {self.stride} differ in rank")
        if any(d < 0 for d in self.shape) or any(s < 0 for s in self.stride) or self.offset < 0:
            raise CaseError(f"negative size, stride or offset in {self}")

    def storage_size(self) -> int:
        """Elements the backing storage needs so that the view stays in bounds."""
        if any(d == 0 for d in self.shape):
            return self.offset
        return self.offset + 1 + sum((d - 1) * s for d, s in zip(self.shape, self.stride, strict=True))

    def to_json(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "stride": list(self.stride), "offset": self.offset, "dtype": self.dtype}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TensorSpec:
        _expect_keys(data, {"shape", "stride", "offset", "dtype"}, "tensor")
        return cls(tuple(int(d) for d in data["shape"]), tuple(int(s) for s in data["stride"]),
                   int(data["offset"]), str(data["dtype"]))


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of `shape`."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(strides))


@dataclasses.dataclass(frozen=True)
class Case:
    """One test: program, inputs, values, device and the inductor config patch it compiles under.

    `frozen_weights`: every input but the first becomes a module parameter and the case compiles
    under `torch.no_grad()` with `freezing=True` (the path that gives CPU its CPP GEMM template).
    `tf32`: float32 matmuls may use TF32 (CUDA), in eager and compiled alike.
    `reduced_precision`: cuBLAS may round fp16/bf16 split-K partial sums to the dtype
    (`allow_{fp16,bf16}_reduced_precision_reduction`, CUDA); off, both flags are False.
    `dynamic`: compile with `dynamic=True` (symbolic sizes); `mark_dynamic`: (input, dim) pairs
    marked dynamic instead; `second_call`: inputs of a second call of the same compiled function.
    `consumers`: steps applied to the op's result. `every_choice`: besides the autotuned compile,
    compile once per kernel choice (only that choice allowed) and check each one's numbers.
    `shared_storage`: inputs (of the same dtype) that are views of one storage, so they alias.
    `warm_cache`: compile with inductor's FX graph cache on (the user's default), then once more
    from that cache (a user's second run; frozen: another model of the same architecture, on
    other values) and check that program's outputs too.
    `spelling`: how the program writes the op (SPELLINGS): the `@` operator, a method, F.linear, einsum,
    out= (the buffer is the last input).
    `weight_form`: how the module holds a frozen weight (WEIGHT_FORMS; "plain": the weight itself).
    `backward`: a training step: every input requires grad, the outputs are differentiated with
    fixed integer upstream gradients, and each input's `.grad` is an output too (fuzz.run.gradients).
    `prologue`: steps applied to x0 before the op (PROLOGUE_STEPS).
    """

    op: str
    inputs: tuple[TensorSpec, ...]
    device: str
    config: tuple[tuple[str, Any], ...]
    value_mode: str = "normal"
    seed: int = 0
    params: tuple[tuple[str, float], ...] = ()
    frozen_weights: bool = False
    tf32: bool = False
    reduced_precision: bool = False
    dynamic: bool = False
    consumers: tuple[str, ...] = ()
    mark_dynamic: tuple[tuple[int, int], ...] = ()
    second_call: tuple[TensorSpec, ...] = ()
    every_choice: bool = False
    shared_storage: tuple[int, ...] = ()
    spelling: str = "call"
    warm_cache: bool = False
    weight_form: str = "plain"
    backward: bool = False
    prologue: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise CaseError(f"unknown op {self.op!r}; known: {', '.join(OPS)}")
        if self.device not in DEVICES:
            raise CaseError(f"unknown device {self.device!r}; known: {', '.join(DEVICES)}")
        if self.value_mode not in VALUE_MODES:
            raise CaseError(f"unknown value mode {self.value_mode!r}; known: {', '.join(VALUE_MODES)}")
        if self.spelling not in SPELLINGS[self.op]:
            raise CaseError(f"{self.op} has no spelling {self.spelling!r}; known: {', '.join(SPELLINGS[self.op])}")
        count = INPUT_COUNT[self.op] + (self.spelling == "out")
        if len(self.inputs) != count:
            last = " (the out= buffer last)" if self.spelling == "out" else ""
            raise CaseError(f"{self.op} takes {count} inputs{last}, got {len(self.inputs)}")
        bad = [k for k, _ in self.params if k not in PARAM_KEYS[self.op]]
        if bad:
            raise CaseError(f"unknown parameter {bad[0]!r} for {self.op}")
        unknown = [c for c in self.consumers if c not in CONSUMERS]
        if unknown:
            raise CaseError(f"unknown consumer {unknown[0]!r}; known: {', '.join(CONSUMERS)}")
        if any(p not in PROLOGUE_STEPS for p in self.prologue) or (self.prologue and self.op not in PROLOGUE_OPS):
            raise CaseError(f"a prologue takes the steps {', '.join(PROLOGUE_STEPS)} before "
                            f"{', '.join(PROLOGUE_OPS)}, not {list(self.prologue)} before {self.op}")
        if self.prologue and "mutate_input" in self.consumers:
            raise CaseError("with a prologue x0 is a computed tensor: mutate_input would not update an input")
        self._check_upcast()
        if "projections" in self.consumers and (self.op not in PROJECTION_OPS
                                                or (self.op == "addmm" and not self.inputs[2].shape)):
            raise CaseError(f"the projections step applies {' or '.join(PROJECTION_OPS)} again (addmm with a bias "
                            f"of rank 1 or 2), not {self.op}")
        if self.spelling not in SCALAR_SPELLINGS and any(v != 1.0 for _, v in self.params):
            raise CaseError(f"{self.op} spelled {self.spelling!r} is `bias + a @ b`: alpha and beta must be 1")
        for i, d in self.mark_dynamic:
            if not (0 <= i < len(self.inputs) and 0 <= d < len(self.inputs[i].shape)):
                raise CaseError(f"mark_dynamic names input {i} dim {d}, which does not exist")
        if any(not 0 <= i < len(self.inputs) for i in self.shared_storage) or \
                len(set(self.shared_storage)) != len(self.shared_storage):
            raise CaseError(f"shared_storage {list(self.shared_storage)} must name distinct inputs")
        if len({self.inputs[i].dtype for i in self.shared_storage}) > 1:
            raise CaseError("inputs in shared_storage must have one dtype")
        if self.second_call and [len(t.shape) for t in self.second_call] != [len(t.shape) for t in self.inputs]:
            raise CaseError("second_call inputs must match the first call's inputs in number and rank")
        if self.frozen_weights and self.device != "cpu":
            raise CaseError("frozen_weights (the CPP GEMM path) is a CPU-only case")
        self._check_weight_form()
        self._check_integer()
        self._check_backward()
        self._check_out()
        if list(self.config) != sorted(self.config):
            raise CaseError("config entries must be sorted by key (use Case.make)")

    def _check_upcast(self) -> None:
        if not set(self.prologue) & set(UPCASTS):
            return
        if self.prologue[0] not in UPCASTS or sum(p in UPCASTS for p in self.prologue) > 1:
            raise CaseError(f"an upcast is the prologue's first step, and its only one: {list(self.prologue)}")
        if self.inputs[0].dtype != "float32" or self.backward or 0 in self.shared_storage:
            raise CaseError("an upcast prologue feeds a float32 op (no training case) an activation held in its "
                            "own storage")

    def _check_weight_form(self) -> None:
        if self.weight_form not in WEIGHT_FORMS:
            raise CaseError(f"unknown weight form {self.weight_form!r}; known: {', '.join(WEIGHT_FORMS)}")
        if self.weight_form != "plain" and not self.frozen_weights:
            raise CaseError(f"weight form {self.weight_form!r} needs frozen_weights")
        if self.weight_form in FUSED_THIRD and self.op not in FLOAT_PRODUCT_OPS:
            raise CaseError(f"a fused weight is a float product's operand, not {self.op}'s")
        if self.weight_form == "cast" and (self.op not in FLOAT_PRODUCT_OPS
                                           or any(t.dtype not in CAST_DTYPES for t in self.inputs)):
            raise CaseError(f"the cast form computes a float product in {' or '.join(CAST_DTYPES)}, not "
                            f"{self.op} on {', '.join(sorted({t.dtype for t in self.inputs}))}")
        int8 = self.weight_form in INT8_FORMS
        if int8 and (self.op, self.spelling) != ("mm", "call"):
            raise CaseError("an int8 weight form is an mm spelled as the woq pattern (spelling 'call')")
        if int8 and (self.inputs[1].dtype != "int8" or self.inputs[0].dtype not in ("float32", "float16", "bfloat16")
                     or set(self.consumers) & set(WEIGHT_READING_STEPS)):
            raise CaseError("an int8 weight form has an int8 weight, float activations and no step that reads "
                            "the weight as (K, N)")

    def integer_product(self) -> bool:
        """Whether this is a float product's op on integer operands (not int_mm's int8 product)."""
        return self.op in FLOAT_PRODUCT_OPS and self.inputs[0].dtype in INTEGER_DTYPES

    def _check_integer(self) -> None:
        if not self.integer_product():
            return
        dtype = self.inputs[0].dtype
        if self.device != "cpu" or any(t.dtype != dtype for t in self.inputs):
            raise CaseError(f"an integer {self.op} runs on the CPU (eager's CUDA mm has no integer kernel), all of "
                            f"its inputs {dtype}")
        if self.value_mode not in INTEGER_VALUE_MODES or self.weight_form not in ("plain", *FUSED_THIRD):
            raise CaseError(f"an integer product takes value modes {', '.join(INTEGER_VALUE_MODES)} and a plain or "
                            f"fused weight, not {self.value_mode} with {self.weight_form}")
        unsigned = dtype == "uint8"
        if any(v != int(v) or (unsigned and v < 0) for _, v in self.params):
            raise CaseError(f"alpha and beta of an integer {self.op} are integers (eager refuses others)"
                            + (", not negative for uint8" if unsigned else ""))
        wrong = [c for c in self.consumers if c not in INTEGER_STEPS or (unsigned and c == "projections")]
        if wrong or (unsigned and "neg" in self.prologue):
            raise CaseError(f"an integer product takes the steps {', '.join(INTEGER_STEPS)} (uint8: no projections "
                            f"and no negating prologue), not {(wrong or ['neg'])[0]!r}")

    def _check_backward(self) -> None:
        if not self.backward:
            return
        if self.frozen_weights or self.op not in FLOAT_PRODUCT_OPS or self.tf32 or self.reduced_precision:
            raise CaseError(f"a training case (backward) is an unfrozen float product without TF32 or "
                            f"reduced-precision reductions, not {self.op}"
                            + (" with frozen weights" if self.frozen_weights else ""))
        if self.value_mode not in BACKWARD_VALUE_MODES:
            raise CaseError(f"a training case takes value modes {', '.join(BACKWARD_VALUE_MODES)}, "
                            f"not {self.value_mode}")
        if any(t.dtype not in ("float32", "float16", "bfloat16") for t in self.inputs):
            raise CaseError("a training case has float32, float16 or bfloat16 inputs")
        other = [c for c in self.consumers if c not in BACKWARD_STEPS]
        if other:
            raise CaseError(f"a training case takes the steps {', '.join(BACKWARD_STEPS)}, not {other[0]!r}")

    def _check_out(self) -> None:
        if self.spelling != "out":
            return
        if self.frozen_weights or self.backward:
            raise CaseError("an out= buffer is an argument of the call: no frozen weights, no training case")
        n = INPUT_COUNT[self.op]
        for call in (self.inputs, self.second_call) if self.second_call else (self.inputs,):
            out, want = call[n], (*call[0].shape[:-1], call[1].shape[-1])
            if out.shape != want or out.dtype != call[0].dtype:
                raise CaseError(f"the out= buffer (input {n}) has the result's shape {want} and dtype "
                                f"{call[0].dtype}, not {out.shape} {out.dtype}")
            if 0 not in out.shape and any(size > 1 and stride != row_major for stride, row_major, size
                                          in zip(out.stride, contiguous_strides(out.shape), out.shape, strict=True)):
                raise CaseError("the out= buffer is contiguous: dynamo runs an out= call into any other layout "
                                "eagerly (a graph break)")
        if n in self.shared_storage:
            raise CaseError("the out= buffer has a storage of its own")
        if any(c in RESULT_MUTATING_STEPS for c in self.consumers[1:]):
            raise CaseError(f"with an out= buffer, {' and '.join(RESULT_MUTATING_STEPS)} may only be the first step")

    def held(self, specs: tuple[TensorSpec, ...]) -> tuple[TensorSpec, ...]:
        """The inputs `specs` (of either call) as the caller holds them: x0 in an upcast's narrower dtype."""
        if specs and self.prologue and self.prologue[0] in UPCASTS:
            return (dataclasses.replace(specs[0], dtype=UPCASTS[self.prologue[0]]), *specs[1:])
        return specs

    @property
    def out_buffer(self) -> int | None:
        """The index of the out= buffer among the inputs (the last), or None."""
        return INPUT_COUNT[self.op] if self.spelling == "out" else None

    @classmethod
    def make(cls, *, config: Mapping[str, Any], params: Mapping[str, float] | None = None, **kw: Any) -> Case:
        """Build a Case from plain mappings (sorting them into the frozen form)."""
        return cls(config=tuple(sorted(config.items())), params=tuple(sorted((params or {}).items())), **kw)

    @property
    def config_dict(self) -> dict[str, Any]:
        return dict(self.config)

    @property
    def params_dict(self) -> dict[str, float]:
        return dict(self.params)

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "inputs": [t.to_json() for t in self.inputs],
            "device": self.device,
            "config": dict(self.config),
            "value_mode": self.value_mode,
            "seed": self.seed,
            "params": dict(self.params),
            "frozen_weights": self.frozen_weights,
            "tf32": self.tf32,
            "reduced_precision": self.reduced_precision,
            "dynamic": self.dynamic,
            "consumers": list(self.consumers),
            "mark_dynamic": [list(p) for p in self.mark_dynamic],
            "second_call": [t.to_json() for t in self.second_call],
            "every_choice": self.every_choice,
            "shared_storage": list(self.shared_storage),
            "spelling": self.spelling,
            "warm_cache": self.warm_cache,
            "weight_form": self.weight_form,
            "backward": self.backward,
            "prologue": list(self.prologue),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        """Parse and validate; unknown ops, dtypes, fields or config keys raise CaseError."""
        if not isinstance(data, Mapping):
            raise CaseError(f"a case must be a JSON object, got {type(data).__name__}")
        optional = {f.name for f in dataclasses.fields(cls)} - _REQUIRED
        _expect_keys(data, _REQUIRED, "case", optional)
        data = {**_DEFAULTS, **data}
        config = data["config"]
        if not isinstance(config, Mapping):
            raise CaseError("case config must be an object of inductor config keys")
        validate_config_keys(config)
        try:
            inputs = tuple(TensorSpec.from_json(t) for t in data["inputs"])
            return cls.make(op=str(data["op"]), inputs=inputs, device=str(data["device"]), config=config,
                            value_mode=str(data["value_mode"]), seed=int(data["seed"]),
                            params={str(k): float(v) for k, v in data["params"].items()},
                            frozen_weights=bool(data["frozen_weights"]), tf32=bool(data["tf32"]),
                            reduced_precision=bool(data["reduced_precision"]),
                            dynamic=bool(data["dynamic"]), consumers=tuple(str(c) for c in data["consumers"]),
                            mark_dynamic=tuple((int(i), int(d)) for i, d in data["mark_dynamic"]),
                            second_call=tuple(TensorSpec.from_json(t) for t in data["second_call"]),
                            every_choice=bool(data["every_choice"]),
                            shared_storage=tuple(int(i) for i in data["shared_storage"]),
                            spelling=str(data["spelling"]), warm_cache=bool(data["warm_cache"]),
                            weight_form=str(data["weight_form"]), backward=bool(data["backward"]),
                            prologue=tuple(str(p) for p in data["prologue"]))
        except (TypeError, AttributeError) as e:
            raise CaseError(f"malformed case: {e}") from None

    @classmethod
    def loads(cls, text: str) -> Case:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise CaseError(f"case is not valid JSON: {e}") from None
        return cls.from_json(data)


_REQUIRED = {"op", "inputs", "device", "config"}
_DEFAULTS: dict[str, Any] = {
    "value_mode": "normal", "seed": 0, "params": {}, "frozen_weights": False, "tf32": False,
    "reduced_precision": False, "dynamic": False,
    "consumers": [], "mark_dynamic": [], "second_call": [], "every_choice": False,
    "shared_storage": [], "spelling": "call", "warm_cache": False, "weight_form": "plain",
    "backward": False, "prologue": []}
"""JSON fields a Case may omit (older findings stay loadable)."""


def validate_config_keys(config: Mapping[str, Any]) -> None:
    """Raise CaseError naming the first key that the installed inductor config does not have."""
    from fuzz.probe.inductor import inductor_config_keys  # the probe reads the installed config

    known = inductor_config_keys()
    for key in config:
        if key not in known:
            raise CaseError(f"unknown inductor config key {key!r} (not in torch._inductor.config of this torch)")


def _expect_keys(data: Mapping[str, Any], keys: set[str], what: str, optional: AbstractSet[str] = frozenset()) -> None:
    if not isinstance(data, Mapping):
        raise CaseError(f"a {what} must be a JSON object")
    missing, extra = keys - set(data), set(data) - keys - optional
    if missing:
        raise CaseError(f"{what} is missing field {sorted(missing)[0]!r}")
    if extra:
        raise CaseError(f"{what} has unknown field {sorted(extra)[0]!r}")
