"""What a registered bug is (KnownBug: its trigger region, the violations it explains, where it
lives and where it was seen) and the checks an entry uses to tell its own deviation from another."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from oracles.model import OutputCheck, Violation
from oracles.numerics import eager_wrong_too, wrong_elements
from oracles.signature import AGREES_PREFIX
from strategies.backends import TEMPLATE_BACKENDS, autotuned, config_backends
from strategies.case import Case


@dataclasses.dataclass(frozen=True)
class KnownBug:
    name: str
    oracles: tuple[str, ...]  # the oracles whose violations it explains
    signatures: tuple[str, ...]  # regexes matching the whole signature of each violation it explains
    applies: Callable[[Case], bool]  # the trigger: the region of cases the bug is known to affect
    untrigger: Callable[[Case], Case]  # the same case without the trigger (outside the region)
    tracking: str  # upstream issue/PR, or the repro in this repo while it is not filed
    torch_versions: tuple[str, ...]  # version prefixes where its repro was seen failing, e.g. "2.13"
    devices: tuple[str, ...]  # the devices ("cpu", "cuda") its repro was seen failing on
    messages: tuple[str, ...] = ()  # regexes one of which the violation's message must contain (if any)
    lives_in: str = ""  # ATEN: an ATen kernel (eager shows it too); TEMPLATE: inductor's generated code; "": any
    fingerprint: Callable[[OutputCheck], bool] | None = None  # wrong values: are they what this bug produces?
    eager_shows: bool = True  # an ATen bug: eager shows it on the case's own inputs (not only on inductor's copies)

    def matches(self, violation: Violation, case: Case, torch_version: str) -> bool:
        """Region, signature, message, version and device match (the re-run without the trigger is
        the caller's: FuzzSession.evaluate)."""
        return (violation.oracle in self.oracles and case.device in self.devices and self.applies(case)
                and any(re.fullmatch(p, violation.signature) for p in self.signatures)
                and (not self.messages or any(re.search(p, violation.message) for p in self.messages))
                and any(torch_version.startswith(p) for p in self.torch_versions)
                and (self.lives_in != TEMPLATE or template_may_serve(case)))

    def fits(self, violation: Violation, check: OutputCheck | None, others: bool = False) -> bool:
        """The violation comes from a choice this bug can be in, and (for a wrong value, `check` the
        output it judged) its deviation is the bug's: an ATen bug's shows in eager at every element
        where the compiled output deviates; a fingerprint, where the entry has one, holds. `others`:
        the program makes other autotuned selections, so a single choice's output carries theirs too."""
        family = "" if others else violation.parsed.choice  # "": an autotuned result, from any choice
        if self.lives_in == ATEN and family and not family.startswith("aten::"):
            return False
        if self.lives_in == TEMPLATE and family.startswith("aten::"):
            return False
        if check is None or check.compiled.shape != check.reference.shape:
            return True
        if self.lives_in == ATEN and self.eager_shows and not eager_deviates_too(check):
            return False
        return self.fingerprint is None or self.fingerprint(check)


ATEN, TEMPLATE = "aten", "template"


def template_may_serve(case: Case) -> bool:
    """Whether a generated template may have computed any of the case's results: max-autotune is on
    and the backend set holds the device's template backend (else every choice is extern)."""
    config = case.config_dict
    return autotuned(config) and TEMPLATE_BACKENDS.get(case.device, "") in config_backends(config)


def eager_deviates_too(check: OutputCheck) -> bool:
    """Eager deviates from the reference wherever the compiled output does (values aside: an ATen
    bug may leave garbage, which differs from call to call)."""
    wrong = wrong_elements(check.compiled, check)
    return bool(wrong.any()) and eager_wrong_too(check, wrong)


def nan_where_finite(check: OutputCheck) -> bool:
    """The fingerprint of a zero scalar times inf/NaN: every wrong element is NaN."""
    wrong = wrong_elements(check.compiled, check)
    return bool(wrong.any()) and bool(check.compiled.double()[wrong].isnan().all())


def view_moved(check: OutputCheck) -> bool:
    """The fingerprint of a view of an input placed elsewhere in its storage than eager's view."""
    e, c = check.eager_meta, check.compiled_meta
    return e is not None and c is not None and any(a.startswith("in") for a in e.aliases) and c.offset != e.offset


EAGER_AGREES_NAME = "eager-agrees"
"""What `known` says of a REFERENCE_DIFFERS violation no registered ATen bug explains: eager and
compiled agree, the float64 reference differs (reported apart; never new)."""


BATCHED_OPS = ("bmm", "baddbmm", "matmul")
HALF = ("bfloat16", "float16")
WRONG_VALUES = r"(exact-mismatch|tolerance|nonfinite)"  # the numerics signatures of a wrong value
PRODUCT_OPS = "mm|addmm|bmm|baddbmm|matmul|mm_plus_mm"
"""The ops with a weight operand (x1), as a regex alternation."""
PRODUCT_WRONG_VALUES = (rf"{WRONG_VALUES}:({PRODUCT_OPS}):\w+(@.+)?",)
"""A wrong value of an op with a weight operand (x1), autotuned or any single choice's."""
EAGER_AGREED = f"({re.escape(AGREES_PREFIX)})"  # eager agrees: an ATen bug's signature, optional


EAGER_AGREES = KnownBug(
    name=EAGER_AGREES_NAME, oracles=("numerics",), signatures=(f"{EAGER_AGREED}.*",), applies=lambda c: True,
    untrigger=lambda c: c, torch_versions=("",), devices=("cpu", "cuda"),
    tracking="eager and compiled agree, the float64 reference differs: an ATen kernel's deviation, or an "
             "accumulator's range or rounding the reference does not model (not an inductor bug)")
"""Not in KNOWN_BUGS: what explains a REFERENCE_DIFFERS violation no registered ATen bug explains."""
