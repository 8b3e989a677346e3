"""What a failed compile or run says, in one line: the innermost exception type, its first
meaningful message line and the innermost inductor frame across the cause chain."""

from __future__ import annotations

import os
import traceback

from oracles.model import Failure

NO_VALID_CHOICES = {"No choices exist": "no-choices", "All choices failed to compile": "all-failed-to-compile"}
"""NoValidChoicesError's reasons (select_algorithm.py); a bare one means every benchmark failed."""


BOILERPLATE = ("Set TORCHDYNAMO_VERBOSE", "For even more developer context", "You can suppress this exception",
               "Set TORCH_LOGS")
"""Lines torch appends to every compile error: never the message that tells failures apart."""


def _compiler_error(exc: BaseException) -> str:
    """The first `error:` line a failed C++ compile printed (CalledProcessError keeps its output)."""
    output = getattr(exc, "stderr", None) or getattr(exc, "output", None) or ""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
    line = next((ln for ln in text.splitlines() if "error:" in ln), "")
    return line.split("error:", 1)[1].strip() if line else ""


def _cause_chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then what caused it, outermost first (no exception twice)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def innermost_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost torch/_inductor frame (else the innermost torch frame) across the cause chain."""
    frames = [fs for e in _cause_chain(exc) for fs in traceback.extract_tb(e.__traceback__)]
    paths = [fs.filename.replace(os.sep, "/") for fs in frames]
    return next((fs for fs, p in zip(reversed(frames), reversed(paths), strict=True) if "torch/_inductor/" in p),
                next((fs for fs, p in zip(reversed(frames), reversed(paths), strict=True) if "/torch/" in p), None))


def describe_failure(exc: BaseException) -> Failure:
    """Innermost exception type, its first meaningful message line (a C++ compile error's own
    `error:` line), and the innermost torch/_inductor frame (else the innermost torch frame)
    across the cause chain."""
    chain = _cause_chain(exc)
    no_choices = next((next((kind for text, kind in NO_VALID_CHOICES.items() if text in str(e)), "all-failed-to-run")
                       for e in chain if type(e).__name__ == "NoValidChoicesError"), "")
    fs = innermost_frame(exc)
    frame = ""
    if fs is not None:
        path = fs.filename.replace(os.sep, "/")
        frame = f"{path.split('torch/_inductor/' if 'torch/_inductor/' in path else 'torch/')[-1]}:{fs.name}"
    lines = [_compiler_error(e) for e in reversed(chain)]
    lines += [line.strip() for e in reversed(chain) for line in str(e).splitlines()]
    message = next((line for line in lines if line and not line.endswith(":")
                    and not line.startswith(BOILERPLATE)), "")[:300]
    return Failure(type=type(chain[-1]).__name__, message=message, frame=frame, no_valid_choices=no_choices)
