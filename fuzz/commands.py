"""What each `python -m fuzz` subcommand does with its parsed arguments (fuzz/cli.py parses them).

Heavy imports (torch, the engine) happen inside each command, so parsing and --help need none. An
error ends with one line on stderr and exit status 2 (`_fail`), never a traceback."""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import sys
from pathlib import Path
from typing import Any, NoReturn


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)


def _emit(line: str) -> None:
    print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout, flush=True)


def _fail(message: str) -> NoReturn:
    print(f"python -m fuzz: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def cmd_run(args: argparse.Namespace) -> int:
    from fuzz.engine.campaign import CampaignError, CampaignOptions, run_campaign
    from fuzz.engine.machine import visible_gpu_ids
    from fuzz.tools.profiles import default_profile

    if args.workers is not None and args.workers < 1:
        _fail("--workers must be at least 1")
    if args.coverage and importlib.util.find_spec("coverage") is None:
        _fail("--coverage needs the coverage package (pip install coverage)")
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    gpus = [] if args.device == "cpu" else visible_gpu_ids()
    opts = CampaignOptions(
        out=args.out, budget_s=args.budget, seed=seed, ops=args.op, backends=args.backend, dtypes=args.dtype,
        device=None if args.device == "auto" else args.device,
        profile=args.hypothesis_profile or default_profile(len(gpus)), workers=args.workers,
        case_timeout_s=args.case_timeout, shrink_s=args.shrink_time or min(60.0, max(10.0, args.budget / 20)),
        db=args.db, store=args.store, coverage=args.coverage, export=not args.no_export, repro_s=args.repro_time,
        progress=args.progress)
    try:
        return run_campaign(opts)
    except CampaignError as e:
        _fail(str(e))


def _sources(args: argparse.Namespace, load: bool = True) -> tuple[Any, list[Any], list[dict[str, Any]],
                                                                  list[dict[str, Any]]]:
    """The command's sources, and (when `load`) their findings, campaign records and samples."""
    from fuzz.store import sources

    try:
        where = sources.resolve(args.sources)
        return (where, *sources.load(where, _warn)) if load else (where, [], [], [])
    except sources.SourceError as e:
        _fail(str(e))


def replay_state(finding: Any, case: dict[str, Any], outcome: Any, info: dict[str, Any]) -> tuple[str, int]:
    """What replaying one of a finding's cases showed, and the exit status it calls for: 1 a new
    finding still fails or the case fails differently (not only in known bugs), 2 it cannot be
    checked (rejected now), else 0."""
    from fuzz.store.sightings import rejected, sightings

    records = sightings(case, outcome, info, {})  # info: torch version
    keys = {r.key for r in records}
    if finding.key in keys:
        return ("STILL FAILS" if finding.is_new else "STILL FAILS (known upstream bug)"), int(finding.is_new)
    registered = [r.known_bug["name"] for r in records if r.known_bug and r.signature == finding.signature
                  and r.oracle == finding.oracle]
    if finding.is_new and registered and len(keys) == 1:  # the registry explains it since it was found
        return f"STILL FAILS (now a known upstream bug: {registered[0]})", 0
    if keys and all(r.known_bug for r in records):  # e.g. autotuning picked another kernel, which hit a known bug
        return "FAILS DIFFERENTLY, as known upstream bugs only: " + ", ".join(sorted(keys)), 0
    if keys:
        return "FAILS DIFFERENTLY: " + ", ".join(sorted(keys)), 1
    if rejected(outcome):
        why = outcome.invalid or (outcome.verdict.get("failure") or {}).get("message", "")
        return f"CANNOT CHECK (the case is rejected now: {str(why).splitlines()[0][:120] if why else '-'})", 2
    return "FIXED", 0


def cmd_replay(args: argparse.Namespace) -> int:
    import tempfile

    from fuzz.engine.executor import Executor, WorkerStartError

    _, findings, _, _ = _sources(args)
    if not findings:
        print("no findings to replay")
        return 0
    statuses = []
    with tempfile.TemporaryDirectory(prefix="mm-fuzz-replay-") as logs:  # the workers' last words, read on death
        executor = Executor(0, log_dir=Path(logs), case_timeout_s=args.case_timeout)
        try:
            for f in findings:
                case = f.case if args.original else f.best_case
                try:
                    outcome = executor.run(case)
                except WorkerStartError as e:
                    _fail(str(e))
                state, status = replay_state(f, case, outcome, executor.info)
                statuses.append(status)
                print(f"{state:<12} {f.key}  (seen {f.count}x)", flush=True)
        finally:
            executor.stop()
    print(f"{len(findings)} finding(s) replayed: {statuses.count(1)} still fail or fail differently, "
          f"{statuses.count(2)} cannot be checked")
    return 1 if 1 in statuses else (2 if 2 in statuses else 0)


def cmd_export(args: argparse.Namespace) -> int:
    from fuzz.export.repro import export_findings
    from fuzz.store.findings import FindingsStore

    where, _, _, _ = _sources(args, load=False)
    others = where.loose + where.stores
    if others and args.to is None:
        _fail(f"{others[0]} is not a campaign directory: say where the repros go with --to DIR")
    batches: list[tuple[Any, Path, str]] = [(FindingsStore(c, _warn), args.to or c / "repros", str(c))
                                            for c in where.campaigns]
    if others:  # one merged batch: there is no campaign directory to record the results in
        batches = [(_sources(args)[1], args.to, "the sources")]
    for batch, target, name in batches:
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"cannot write to {target}: {e.strerror or e}")
        done = export_findings(batch, target, emit=_emit, verify=not args.no_verify, timeout_s=args.timeout)
        print(f"{name}: {len(done)} repro(s) in {target}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import json

    from fuzz.export import report

    _, findings, records, samples = _sources(args)
    summary = report.summarize(findings, records, samples)
    for path, text in ((args.junit, report.junit_xml(summary)), (args.markdown, report.markdown(summary))):
        if path is not None:
            _write(path, text)
    if args.html is not None:
        from fuzz.export.dashboard import html

        _write(args.html, html(summary, args.html.parent))
    if args.json is not None:
        _write(args.json, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    if args.upstream is not None:
        from fuzz.bugs.issue_drafts import write_drafts

        try:
            drafts = write_drafts(findings, args.upstream, [Path(s) for s in args.sources if "://" not in s], _warn)
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


def cmd_bench(args: argparse.Namespace) -> int:
    from fuzz.engine.campaign import default_workers
    from fuzz.engine.machine import visible_gpu_ids
    from fuzz.tools.bench import bench, summary

    device = "cuda" if args.device == "cuda" or (args.device == "auto" and visible_gpu_ids()) else "cpu"
    if device == "cuda" and not visible_gpu_ids():
        _fail("--device cuda: no GPU is visible on this machine")
    if args.noise:
        return _noise(args, device)
    if args.time_to_find:
        return _time_to_find(args, device)
    sides = bench(args.budget, args.workers or [default_workers(device)], device, args.seed, _emit)
    print(summary(sides), flush=True)
    return 0


def _time_to_find(args: argparse.Namespace, device: str) -> int:
    from fuzz.probe.plants import PLANTS, PlantError, plant_named
    from fuzz.tools.time_to_find import TimeToFindError, table, time_to_find

    try:
        plants = [plant_named(name) for name in args.plants] if args.plants else list(PLANTS.values())
    except PlantError as e:
        _fail(f"--plants: {e}")
    try:
        timings = time_to_find(plants, args.budget, args.seed, device, _emit, args.out)
    except (TimeToFindError, RuntimeError) as e:
        _fail(str(e))
    print(table(timings, args.budget), flush=True)
    return 0


def _noise(args: argparse.Namespace, device: str) -> int:
    import tempfile

    from fuzz.engine import noise

    if args.campaigns < 1:
        _fail("--campaigns must be at least 1")
    from fuzz.engine.campaign import default_workers

    seeds = args.seeds or list(range(1, args.campaigns + 1))
    if args.workers is not None and (len(args.workers) != 1 or not args.side_by_side):
        _fail("--noise takes --workers N (one number) only with --side-by-side")
    shared = (args.workers[0] if args.workers else max(1, default_workers(device) // len(seeds))) \
        if args.side_by_side else None
    root = args.out or Path(tempfile.mkdtemp(prefix="mm-fuzz-noise-"))
    try:
        runs = noise.noise(args.budget, seeds, root, device, _emit, shared)
    except noise.NoiseError as e:
        _fail(str(e))
    return noise.exit_status(runs)
