"""What a plain-torch repro shows and how it compiles: how its script shows the violation (raise,
or assert on values: check_kind) and the Form it compiles in (torch.compile's mode, the inductor
config it patches, frozen weights, seeded or random inputs, or eager)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

RAISES, EXACT, BOUND, NONFINITE = "raises", "exact", "bound", "nonfinite"
STRIDES, META, VIEW = "strides", "meta", "view"
NUMERICS_CHECKS = {"exact-mismatch": EXACT, "tolerance": BOUND, "nonfinite": NONFINITE, "output-strides": STRIDES,
                   "output-meta": META, "output-view": VIEW}
VALUE_CHECKS = (EXACT, BOUND, NONFINITE)
"""The checks against the float64 reference (the others compare with eager)."""


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

    def __hash__(self) -> int:  # a patched value may be a dict (post_grad_fusion_options)
        return hash(json.dumps(self.to_json(), sort_keys=True, default=repr))

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

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Form:
        return cls.make(data["mode"], data["patch"], data["frozen"], data["seeded"]).replace(eager=data["eager"])
