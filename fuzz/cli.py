"""`python -m fuzz` (or `mm-autotune-fuzz`): run a campaign, replay stored findings, export
repros, report. This module parses the command line; fuzz/commands.py carries the subcommands out.

Bad input (an unknown op, backend or dtype, a budget that does not parse, an unwritable output
directory, a source that does not exist, a store that does not answer) ends with one line on
stderr and exit status 2, never a traceback. `replay`, `export` and `report` skip a corrupt
finding file with a warning and go on."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from fuzz import commands

EXAMPLES = """examples:
  python -m fuzz run --budget 5m --out campaign
  python -m fuzz run --budget 8h --op mm,addmm --dtype float16 --out campaign --store redis://fuzz-redis:6379/0
  python -m fuzz replay campaign
  python -m fuzz export campaign
  python -m fuzz report campaign
  python -m fuzz report redis://fuzz-redis:6379/0 --html merged.html --junit merged.xml
"""
STORE_ENV = "MM_FUZZ_STORE"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def duration(text: str) -> float:
    """Seconds from '90', '90s', '5m', '1h30m', '2.5h'."""
    parts = re.fullmatch(r"\s*((?:\d+(?:\.\d+)?[hms]?\s*)+)", text or "")
    if not parts:
        raise argparse.ArgumentTypeError(f"cannot parse {text!r} as a duration (use e.g. 90s, 5m, 1h30m)")
    seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1, "": 1}[u]
                  for n, u in re.findall(r"(\d+(?:\.\d+)?)([hms]?)", parts.group(1)))
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"duration {text!r} must be more than zero")
    return seconds


def _choices(kind: str, known: Sequence[str], upper: bool = False) -> Any:
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(i.strip().upper() if upper else i.strip() for i in text.split(","))
        if "" in items and any(items):
            raise argparse.ArgumentTypeError(f"empty {kind} in {text!r} (a stray comma?)")
        items = tuple(i for i in items if i)
        for item in items:
            if item not in known:
                raise argparse.ArgumentTypeError(f"unknown {kind} {item!r}; known: {', '.join(known)}")
        if not items:
            raise argparse.ArgumentTypeError(f"no {kind} given")
        return items
    return parse


def _numbers(what: str, minimum: int) -> Any:
    """A parser of comma-separated integers of at least `minimum`, e.g. worker counts 1,2,4."""
    def parse(text: str) -> list[int]:
        try:
            numbers = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"cannot parse {text!r} as {what} (e.g. 1,2,4)") from None
        if not numbers or min(numbers) < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be at least {minimum}, got {text!r}")
        return numbers
    return parse


def _names(text: str) -> list[str]:
    """Comma-separated names, e.g. planted bugs (at least one)."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected NAME[,NAME...], got {text!r}")
    return names


def _known_backends() -> list[str]:
    from strategies.backends import parse_backends
    from strategies.configs import BACKENDS

    return sorted({b for sets in BACKENDS.values() for s in sets for b in parse_backends(s)})


def _add_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="campaign output directories, findings directories, finding files, or a shared "
                             "store's URL (redis://host:port/db)")


def build_parser() -> Parser:
    from fuzz.tools.profiles import PROFILES
    from strategies.vocabulary import DTYPES, OPS

    parser = Parser(prog="python -m fuzz", formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Fuzzing campaigns for PyTorch Inductor's max-autotune matmul path.", epilog=EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)

    run = sub.add_parser("run", help="run (or resume) a campaign", description=(
        "Generate cases with Hypothesis and run each in an isolated worker process (up to 12 per GPU, or N on a CPU "
        "machine) until the time budget is spent. Findings are written to OUT/findings the moment they are found "
        "(deduplicated by violation signature, with counts), shrunk, exported as standalone repros to OUT/repros "
        "and summarized in OUT/report.{json,xml,md,html}. Running again with the same OUT resumes the campaign. "
        "Hosts of one campaign share a --store. Exit status: 1 when OUT holds new (unknown) findings, 0 when it "
        "does not, 2 on bad input, 130 / 143 when Ctrl-C / SIGTERM cut it short (reports are written all the "
        "same). Every limit is wall time: the campaign ends within its start-up + --budget + --shrink-time + "
        "--case-timeout + 30s + --repro-time (and the seconds to write the repros and reports); work still running "
        "at its limit is killed: a case at --case-timeout is a hang finding, a repro check at --repro-time is "
        "reported unchecked."))
    run.add_argument("--budget", type=duration, default=duration("5m"), metavar="DURATION",
                     help="wall-clock time to generate cases for, e.g. 90s, 5m, 8h (default 5m), counted from when "
                          "the first worker is ready; no case starts after it, but a finding found near the end may "
                          "still be shrunk for up to --shrink-time, and the cases running then may take up to "
                          "--case-timeout (drivers still running 30s after all that are killed)")
    run.add_argument("--out", type=Path, default=Path("campaign"), metavar="DIR",
                     help="output directory; an existing campaign there is resumed (default ./campaign)")
    run.add_argument("--seed", type=int, default=None,
                     help="campaign seed (default: random, printed); give each host of a shared campaign its own")
    run.add_argument("--op", type=_choices("op", OPS), default=(), metavar="OPS",
                     help=f"only these ops, comma-separated (known: {', '.join(OPS)})")
    run.add_argument("--backend", type=_choices("backend", _known_backends(), upper=True), default=(),
                     metavar="BACKENDS", help="only cases whose max_autotune_gemm_backends uses nothing but these "
                                              f"(known: {', '.join(_known_backends())})")
    run.add_argument("--dtype", type=_choices("dtype", DTYPES), default=(), metavar="DTYPES",
                     help=f"only cases whose first input has one of these dtypes (known: {', '.join(DTYPES)})")
    run.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                     help="auto (default): CUDA when a GPU is visible, else CPU")
    run.add_argument("--hypothesis-profile", choices=PROFILES, default=None, metavar="NAME",
                     help=f"Hypothesis profile ({', '.join(PROFILES)}): examples per round (default: ci when CI "
                          "is set, gpu on a GPU machine, else dev)")
    run.add_argument("--workers", type=int, default=None, metavar="N",
                     help="worker processes in all (default per visible GPU: 0.75 per core of its share of the "
                          "cores, at most 12; on a CPU machine one per core, max 8)")
    run.add_argument("--case-timeout", type=duration, default=duration("5m"), metavar="DURATION",
                     help="a case running longer (wall time) is a hang: its worker is killed and restarted "
                          "(default 5m)")
    run.add_argument("--shrink-time", type=duration, default=None, metavar="DURATION",
                     help="time to shrink each distinct finding (default: a twentieth of the budget, 10s to 60s): no "
                          "shrink step starts after it; a worker spends at most half its time shrinking, findings "
                          "beyond that wait their turn")
    run.add_argument("--store", default=os.environ.get(STORE_ENV, ""), metavar="DIR|URL",
                     help="the store the hosts of one campaign share: redis://[:password@]host:port/db (rediss:// "
                          f"for TLS) or a shared directory; holds the example database and every host's findings "
                          f"(default ${STORE_ENV}, else none). Give each host its own --seed")
    run.add_argument("--db", default="", metavar="DIR|URL",
                     help="Hypothesis example database: a directory, redis://host:port/db, or none (default: the "
                          "--store's, else OUT/examples)")
    run.add_argument("--coverage", action="store_true",
                     help="measure the coverage of inductor's mm path reached by the campaign (slower)")
    run.add_argument("--no-export", action="store_true", help="do not write and verify repro scripts at the end")
    run.add_argument("--repro-time", type=duration, default=None, metavar="DURATION",
                     help="wall time to check repros at the end, new findings first (default: half the budget, at "
                          "least 2m); a check still running then is killed, and repros not checked are written "
                          "unchecked (`python -m fuzz export OUT` checks them); a check done before with the same "
                          "torch, code and case is not run again")
    run.add_argument("--progress", choices=("auto", "tty", "plain", "none"), default="auto",
                     help="live progress: a status line on a terminal (auto), a line every 30s (plain), or none")

    replay = sub.add_parser("replay", help="re-run stored findings and say which still fail", description=(
        "Run each stored finding's case (its shrunk form when there is one) again in an isolated worker and "
        "say whether it still fails the same way. Exit status: 1 when a new (unknown) finding still fails or a "
        "finding now fails differently, else 2 when a case could not be checked (it is rejected now), else 0."))
    _add_sources(replay)
    replay.add_argument("--case-timeout", type=duration, default=duration("5m"), metavar="DURATION",
                        help="per-case timeout (default 5m)")
    replay.add_argument("--original", action="store_true", help="replay the first case found, not the shrunk one")

    export = sub.add_parser("export", help="write a standalone repro script per finding", description=(
        "Write one standalone script per finding (needs only torch; exits 1 while the bug is present, 0 once "
        "fixed) into DIR/repros, and run each with plain python to check that it reproduces."))
    _add_sources(export)
    export.add_argument("--to", type=Path, default=None, metavar="DIR",
                        help="write the scripts here instead of each campaign's repros/ (needed for other sources)")
    export.add_argument("--no-verify", action="store_true", help="write the scripts without running them")
    export.add_argument("--timeout", type=duration, default=duration("15m"), metavar="DURATION",
                        help="time allowed to each script when verifying (default 15m)")

    report = sub.add_parser("report", help="summarize (and merge) findings directories", description=(
        "Merge the findings of one or more campaign directories (hosts, sessions): counts add up, the smallest "
        "shrunk case wins. A shared store's URL reads every host of that campaign. Prints a Markdown summary; "
        "writes JSON / JUnit XML / Markdown / HTML files when asked."))
    _add_sources(report)
    report.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the JSON summary here")
    report.add_argument("--junit", type=Path, default=None, metavar="FILE", help="write JUnit XML here")
    report.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="write the Markdown here")
    report.add_argument("--html", type=Path, default=None, metavar="FILE",
                        help="write the dashboard (one self-contained page) here")
    report.add_argument("--upstream", type=Path, default=None, metavar="DIR",
                        help="write one upstream issue draft (Markdown) per root-cause group into DIR")

    bench = sub.add_parser("bench", help="the campaign engine against a naive compile loop, on one workload",
                           description=(
        "Draw a fixed-seed list of cases for this machine's device; run it through a naive loop (one process, a "
        "fresh torch.compile per case, inductor's caches off) for the budget, then the same cases through the "
        "campaign's workers (each with warm code caches), with the same oracles. Prints cases/min per side and "
        "worker count, "
        "where the time goes, and a last line `speedup: N.Nx over naive ...`. With --noise: run clean campaigns "
        "with different seeds one after another and print each one's new findings; the last line is `noise: N new "
        "finding(s) in M campaign(s)`; exit status 1 when there is one, 2 when a campaign did not finish. With "
        "--time-to-find: plant each planted bug in turn and time, per side, the run until its first finding the bug "
        "causes; the last line is `time to find: suite median Xs (worst Ys), naive median Zs (worst Ws): N.Nx`."))
    bench.add_argument("--budget", type=duration, default=duration("2m"), metavar="DURATION",
                       help="the naive loop's time; the suite sides run its cases, cut at twice that (default 2m); "
                            "with --noise, each campaign's budget; with --time-to-find, the cap per plant and side")
    bench.add_argument("--workers", type=_numbers("worker counts", 1), default=None, metavar="N[,N...]",
                       help="suite workers per GPU (or on the CPU) to measure, e.g. 1,2,4,8 (default: the campaign's)")
    bench.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    bench.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    bench.add_argument("--noise", action="store_true",
                       help="count the new findings of clean campaigns (`run --no-export`) instead of timing")
    bench.add_argument("--time-to-find", action="store_true",
                       help="time how long the naive loop and a campaign take to catch each planted bug")
    bench.add_argument("--plants", type=_names, default=None, metavar="NAME[,NAME...]",
                       help="with --time-to-find: the planted bugs (default: all of fuzz/probe/plants.py)")
    bench.add_argument("--campaigns", type=int, default=3, metavar="N",
                       help="with --noise: how many campaigns, seeds 1..N (default 3)")
    bench.add_argument("--seeds", type=_numbers("seeds", 0), default=None, metavar="S[,S...]",
                       help="with --noise: the campaigns' seeds (instead of 1..N)")
    bench.add_argument("--side-by-side", action="store_true",
                       help="with --noise: run the campaigns at once, the machine's default workers shared among "
                            "them (--workers N: N each)")
    bench.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="with --noise: where the campaigns go, DIR/seed-N; with --time-to-find, DIR/PLANT "
                            "(default: a new temporary directory, kept)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (default: the process's arguments) and run its subcommand; returns the exit status."""
    args = build_parser().parse_args(argv)
    command = {"run": commands.cmd_run, "replay": commands.cmd_replay, "export": commands.cmd_export,
               "report": commands.cmd_report, "bench": commands.cmd_bench}[args.command]
    try:
        return command(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
