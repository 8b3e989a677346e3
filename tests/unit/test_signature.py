"""The Signature value: every signature the oracles write parses and prints back unchanged."""

from __future__ import annotations

import pytest

from oracles.signature import Signature


@pytest.mark.parametrize("text, kind, subject, choice, detail, agrees", [
    ("exact-mismatch:addmm:float16@aten::addmm", "exact-mismatch", ("addmm", "float16"), "aten::addmm", "", False),
    ("reference-differs:nonfinite:mm:bfloat16", "nonfinite", ("mm", "bfloat16"), "", "", True),
    ("choice-crash:mm@triton::mm_persistent_tma:RuntimeError", "choice-crash", ("mm",), "triton::mm_persistent_tma",
     "RuntimeError", False),
    ("dropped:mm@CppTemplateCaller:benchmark", "dropped", ("mm",), "CppTemplateCaller", "benchmark", False),
    ("crash:AssertionError:ir.py:unwrap_storage_for_input", "crash", ("AssertionError", "ir.py",
                                                                      "unwrap_storage_for_input"), "", "", False),
    ("fixed-when-allowed:mm", "fixed-when-allowed", ("mm",), "", "", False),
    ("killed:SIGFPE:addmm", "killed", ("SIGFPE", "addmm"), "", "", False),
])
def test_signatures_parse_into_their_parts_and_print_back(text: str, kind: str, subject: tuple[str, ...],
                                                          choice: str, detail: str, agrees: bool) -> None:
    sig = Signature.parse(text)
    assert (sig.kind, sig.subject, sig.choice, sig.detail, sig.eager_agrees) == (kind, subject, choice, detail, agrees)
    assert str(sig) == text
    assert str(sig.without_choice()) == text.split("@")[0]
