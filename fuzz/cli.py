"""`python -m fuzz`: run a campaign, replay stored findings, export repros, report.

Bad input (an unknown op, backend or dtype, a budget that does not parse, an unwritable output
directory) ends with one line on stderr and exit status 2, never a traceback. `replay`, `export`
and `report` skip a corrupt finding file with a warning and go on."""

from __future__ import annotations

import argparse
import importlib.util
import re
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

EXAMPLES = """examples:
  python -m fuzz run --budget 5m --out findings
  python -m fuzz run --budget 8h --op mm,addmm --dtype float16 --out findings --db /shared/mm-fuzz-db
  python -m fuzz replay findings
  python -m fuzz export findings
  python -m fuzz report host1/findings host2/findings --junit merged.xml --markdown merged.md
"""


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
        items = tuple(i.strip().upper() if upper else i.strip() for i in text.split(",") if i.strip())
        for item in items:
            if item not in known:
                raise argparse.ArgumentTypeError(f"unknown {kind} {item!r}; known: {', '.join(known)}")
        if not items:
            raise argparse.ArgumentTypeError(f"no {kind} given")
        return items
    return parse


def _known_backends() -> list[str]:
    from strategies.configs import BACKENDS

    return sorted({b for sets in BACKENDS.values() for s in sets for b in s.split(",")})


def _add_sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="+", type=Path, metavar="DIR|FILE",
                        help="campaign output directories, findings directories or finding files")


def build_parser() -> Parser:
    from fuzz.profiles import PROFILES
    from strategies.case import DTYPES, OPS

    parser = Parser(prog="python -m fuzz", formatter_class=argparse.RawDescriptionHelpFormatter,
                    description="Fuzzing campaigns for PyTorch Inductor's max-autotune matmul path.", epilog=EXAMPLES)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)

    run = sub.add_parser("run", help="run (or resume) a campaign", description=(
        "Generate cases with Hypothesis and run each in an isolated worker process (one per GPU, or N on a CPU "
        "machine) until the time budget is spent. Findings are written to OUT/findings the moment they are found "
        "(deduplicated by violation signature, with counts), shrunk, exported as standalone repros to OUT/repros "
        "and summarized in OUT/report.{json,xml,md}. Running again with the same OUT resumes the campaign. "
        "Exit status: 1 when OUT holds new (unknown) findings, 0 when it does not, 2 on bad input."))
    run.add_argument("--budget", type=duration, default=duration("5m"), metavar="DURATION",
                     help="wall-clock time to generate cases for, e.g. 90s, 5m, 8h (default 5m), counted from when "
                          "the workers are ready; a finding found near the end may still be shrunk for up to "
                          "--shrink-time")
    run.add_argument("--out", type=Path, default=Path("findings"), metavar="DIR",
                     help="output directory; an existing campaign there is resumed (default ./findings)")
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
                     help="worker processes (default: one per visible GPU; on a CPU machine half the cores, max 8)")
    run.add_argument("--case-timeout", type=duration, default=duration("5m"), metavar="DURATION",
                     help="a case running longer is a hang: its worker is killed and restarted (default 5m)")
    run.add_argument("--shrink-time", type=duration, default=None, metavar="DURATION",
                     help="time to shrink each distinct finding (default: a twentieth of the budget, 10s to 60s); "
                          "a worker spends at most half its time shrinking, findings beyond that wait their turn")
    run.add_argument("--db", default="", metavar="DIR|URL",
                     help="Hypothesis example database: a directory (may be shared by hosts), redis://host:port/0, "
                          "or none (default OUT/examples)")
    run.add_argument("--coverage", action="store_true",
                     help="measure the coverage of inductor's mm path reached by the campaign (slower)")
    run.add_argument("--no-export", action="store_true", help="do not write and verify repro scripts at the end")
    run.add_argument("--progress", choices=("auto", "tty", "plain", "none"), default="auto",
                     help="live progress: a status line on a terminal (auto), a line every 30s (plain), or none")

    replay = sub.add_parser("replay", help="re-run stored findings and say which still fail", description=(
        "Run each stored finding's case (its shrunk form when there is one) again in an isolated worker and "
        "say whether it still fails the same way. Exit status: 1 when a new (unknown) finding still fails."))
    _add_sources(replay)
    replay.add_argument("--case-timeout", type=duration, default=duration("5m"), metavar="DURATION",
                        help="per-case timeout (default 5m)")
    replay.add_argument("--original", action="store_true", help="replay the first case found, not the shrunk one")

    export = sub.add_parser("export", help="write a standalone repro script per finding", description=(
        "Write one standalone script per finding (needs only torch; exits 1 while the bug is present, 0 once "
        "fixed) into DIR/repros, and run each with plain python to check that it reproduces."))
    export.add_argument("sources", nargs="+", type=Path, metavar="DIR", help="campaign output directories")
    export.add_argument("--to", type=Path, default=None, metavar="DIR",
                        help="write the scripts here instead of each campaign's repros/")
    export.add_argument("--no-verify", action="store_true", help="write the scripts without running them")
    export.add_argument("--timeout", type=duration, default=duration("15m"), metavar="DURATION",
                        help="time allowed to each script when verifying (default 15m)")

    report = sub.add_parser("report", help="summarize (and merge) findings directories", description=(
        "Merge the findings of one or more campaign directories (hosts, sessions): counts add up, the smallest "
        "shrunk case wins. Prints a Markdown summary; writes JSON / JUnit XML / Markdown files when asked."))
    _add_sources(report)
    report.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the JSON summary here")
    report.add_argument("--junit", type=Path, default=None, metavar="FILE", help="write JUnit XML here")
    report.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="write the Markdown here")
    report.add_argument("--upstream", type=Path, default=None, metavar="DIR",
                        help="write one upstream issue draft (Markdown) per root-cause group into DIR")
    return parser


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _emit(line: str) -> None:
    print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout, flush=True)


def _fail(message: str) -> NoReturn:
    print(f"python -m fuzz: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def cmd_run(args: argparse.Namespace) -> int:
    from fuzz.campaign import CampaignError, CampaignOptions, run_campaign
    from fuzz.profiles import default_profile
    from fuzz.workers import visible_gpu_ids

    if args.workers is not None and args.workers < 1:
        _fail("--workers must be at least 1")
    if args.db.startswith(("redis://", "rediss://", "unix://")) and importlib.util.find_spec("redis") is None:
        _fail("the Redis example database needs the redis package (pip install redis)")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    gpus = [] if args.device == "cpu" else visible_gpu_ids()
    opts = CampaignOptions(
        out=args.out, budget_s=args.budget, seed=seed, ops=args.op, backends=args.backend, dtypes=args.dtype,
        device=None if args.device == "auto" else args.device,
        profile=args.hypothesis_profile or default_profile(len(gpus)), workers=args.workers,
        case_timeout_s=args.case_timeout, shrink_s=args.shrink_time or min(60.0, max(10.0, args.budget / 20)),
        db=args.db, coverage=args.coverage, export=not args.no_export, progress=args.progress)
    if args.coverage and importlib.util.find_spec("coverage") is None:
        _fail("--coverage needs the coverage package (pip install coverage)")
    try:
        return run_campaign(opts)
    except CampaignError as e:
        _fail(str(e))


def cmd_replay(args: argparse.Namespace) -> int:
    import tempfile

    from fuzz.campaign import sightings
    from fuzz.findings import load_findings
    from fuzz.workers import Executor, WorkerStartError

    findings = load_findings(args.sources, _warn)
    if not findings:
        print("no findings to replay")
        return 0
    executor = Executor(0, log_dir=Path(tempfile.mkdtemp(prefix="mm-fuzz-replay-")), case_timeout_s=args.case_timeout)
    still_new = 0
    try:
        for f in findings:
            case = f.case if args.original else f.best_case
            try:
                outcome = executor.run(case)
            except WorkerStartError as e:
                _fail(str(e))
            if outcome.invalid:  # e.g. the case names a config key this torch does not have
                _warn(f"skipping {f.key}: {outcome.invalid}")
                continue
            keys = {r.key for r in sightings(case, outcome, executor.info, {})}  # info: torch version
            if f.key in keys:
                state = "STILL FAILS" if f.is_new else "STILL FAILS (known upstream bug)"
                still_new += f.is_new
            elif keys:
                state = "FAILS DIFFERENTLY: " + ", ".join(sorted(keys))
            else:
                state = "FIXED"
            print(f"{state:<12} {f.key}  (seen {f.count}x)", flush=True)
    finally:
        executor.stop()
    print(f"{len(findings)} finding(s) replayed: {still_new} new finding(s) still fail")
    return 1 if still_new else 0


def cmd_export(args: argparse.Namespace) -> int:
    from fuzz.findings import FindingsStore
    from fuzz.repro import export_findings

    for source in args.sources:
        if not source.is_dir():
            _warn(f"skipping {source}: not a campaign directory")
            continue
        store = FindingsStore(source, _warn)
        target = args.to or source / "repros"
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"cannot write to {target}: {e.strerror or e}")
        done = export_findings(store, target, emit=_emit,
                               verify=not args.no_verify, timeout_s=args.timeout)
        print(f"{source}: {len(done)} repro(s) in {target}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from fuzz import report
    from fuzz.findings import load_campaign, load_findings

    findings = load_findings(args.sources, _warn)
    records = [load_campaign(s, _warn) for s in args.sources if s.is_dir()]
    summary = report.summarize(findings, records)
    for path, text in ((args.junit, report.junit_xml(summary)), (args.markdown, report.markdown(summary))):
        if path is not None:
            _write(path, text)
    if args.json is not None:
        import json

        _write(args.json, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.upstream is not None:
        from fuzz.upstream import write_drafts

        try:
            drafts = write_drafts(findings, args.upstream, args.sources, _warn)
        except OSError as e:
            _fail(f"cannot write drafts to {args.upstream}: {e.strerror or e}")
        print(f"{len(drafts) - 1} issue draft(s) and index.md in {args.upstream}", file=sys.stderr)
    print(report.markdown(summary))
    print(report.summary_line(findings, records), file=sys.stderr)
    return 0


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        _fail(f"cannot write {path}: {e.strerror or e}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = {"run": cmd_run, "replay": cmd_replay, "export": cmd_export, "report": cmd_report}[args.command]
    try:
        return command(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
