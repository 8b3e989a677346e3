"""A violation's signature as a value: `[reference-differs:]KIND:SUBJECT...[@CHOICE[:DETAIL]]`.

Oracles write signatures as strings (`Violation.signature`: the findings store's key, matched by
the bug registry's patterns); everything that reads one parses it here, once. Examples:
`exact-mismatch:addmm:float16@aten::addmm`, `choice-crash:mm@triton::mm:RuntimeError`,
`crash:AssertionError:ir.py:unwrap_storage_for_input`, `reference-differs:nonfinite:mm:bfloat16`.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["AGREES_PREFIX", "VALUE_KINDS", "Signature"]

AGREES_PREFIX = "reference-differs:"
"""Marks a deviation eager shows too (oracles.model.REFERENCE_DIFFERS)."""
VALUE_KINDS = ("exact-mismatch", "tolerance", "nonfinite")
"""Kinds of a wrong value, one per value mode's way of judging (exact, within a bound, NaN/inf)."""
_CHOICE = re.compile(r"(\w+(?:::\w+)?)(?::(.*))?")


@dataclasses.dataclass(frozen=True)
class Signature:
    kind: str  # what went wrong: "exact-mismatch", "choice-crash", "fixed-when-allowed", "crash", ...
    subject: tuple[str, ...] = ()  # what it went wrong for: the op and dtype, an exception and frame, a template
    choice: str = ""  # the kernel choice alone in the compile ("aten::mm", "triton::mm", "CppTemplateCaller")
    detail: str = ""  # after the choice: the exception type of a choice-crash, the phase of a drop
    eager_agrees: bool = False  # eager shows the same deviation (a REFERENCE_DIFFERS violation)

    @classmethod
    def parse(cls, text: str) -> Signature:
        agrees = text.startswith(AGREES_PREFIX)
        head, at, tail = text.removeprefix(AGREES_PREFIX).partition("@")
        kind, *subject = head.split(":")
        choice, detail = "", ""
        if at:
            found = _CHOICE.fullmatch(tail)
            choice, detail = (found.group(1), found.group(2) or "") if found else (tail, "")
        return cls(kind, tuple(subject), choice, detail, agrees)

    @property
    def op(self) -> str:
        """The first subject: the op for value, layout and choice signatures."""
        return self.subject[0] if self.subject else ""

    @property
    def at(self) -> str:
        """What follows the '@': the choice, then its detail."""
        return self.choice + (f":{self.detail}" if self.detail else "")

    def without_choice(self) -> Signature:
        """The same failure whichever kernel choice showed it (an autotuned result may be any)."""
        return dataclasses.replace(self, choice="", detail="")

    def __str__(self) -> str:
        text = ":".join((self.kind, *self.subject))
        if self.choice:
            text += f"@{self.at}"
        return (AGREES_PREFIX if self.eager_agrees else "") + text
