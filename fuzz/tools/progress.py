"""Live progress of a campaign on the terminal: one status line rewritten in place (at most the
terminal's width, 80 columns when unknown), or a line every 30 s when stderr is not a terminal."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from fuzz.store.findings import Finding


def clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def status_line(elapsed: float, budget_s: float, session: dict[str, Any], findings: Iterable[Finding]) -> str:
    """E.g. `[1:02/5:00] 123 cases 118/min 3% rej | 3 found 1 new | 0 rst`: under 80 columns
    for an 8-hour campaign of a million cases (rej: rejected cases, rst: worker restarts)."""
    findings = list(findings)
    new = sum(f.is_new for f in findings)
    rate = 60 * session["cases"] / elapsed if elapsed > 0 else 0.0
    rejected = 100 * session["rejected"] / session["cases"] if session["cases"] else 0.0
    return (f"[{clock(elapsed)}/{clock(budget_s)}] {session['cases']} cases {rate:.0f}/min {rejected:.0f}% rej | "
            f"{len(findings)} found {new} new | {session['restarts']} rst")


class Progress:
    """Live progress: the status line on a terminal (tty), a line every 30 s (plain), or none."""

    def __init__(self, mode: str, budget_s: float, emit: Callable[[str], None]) -> None:
        if mode == "auto":
            mode = "tty" if sys.stderr.isatty() else "plain"
        self.mode, self.budget_s, self.emit = mode, budget_s, emit
        self.started = time.time()  # reset when the first worker is ready: the budget starts then
        self.ready = False
        self.last = 0.0
        self.line = ""

    def begin(self) -> None:
        """The first worker is ready: the budget's clock starts."""
        self.started, self.ready = time.time(), True

    def status(self, session: dict[str, Any], findings: Iterable[Finding]) -> str:
        if not self.ready:
            return f"[starting {clock(time.time() - self.started)}] waiting for {plural(session['workers'], 'worker')}"
        return status_line(time.time() - self.started, self.budget_s, session, findings)

    def _show(self, line: str) -> None:
        """Rewrite the status line in place, cut to the terminal's width (a longer line wraps
        and every rewrite then scrolls)."""
        self.line = line[:max(20, shutil.get_terminal_size((80, 24)).columns - 1)]
        sys.stderr.write("\r\x1b[K" + self.line)
        sys.stderr.flush()

    def update(self, session: dict[str, Any], findings: Iterable[Finding]) -> None:
        interval = {"tty": 0.5, "plain": 30.0}.get(self.mode)
        if interval is None or time.time() - self.last < interval:
            return
        self.last = time.time()
        if self.mode == "tty":
            self._show(self.status(session, findings))
        else:
            self.emit(self.status(session, findings))

    def event(self, line: str) -> None:
        if self.mode == "none":
            return
        if self.mode == "tty" and self.line:
            sys.stderr.write("\r\x1b[K")
        self.emit(line)
        if self.mode == "tty" and self.line:
            self._show(self.line)

    def finish(self, session: dict[str, Any], findings: Iterable[Finding]) -> None:
        if self.mode == "tty":
            sys.stderr.write("\r\x1b[K")
            self.line = ""
        if self.mode != "none":
            self.emit(self.status(session, findings))
