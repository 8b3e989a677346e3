"""`python -m fuzz.engine.regenerate FINDING.json...`: draw each finding's first case again from the
position in its campaign's stream that it records (`origin`: seed, session, worker, round, index;
see fuzz.engine.stream) and say whether it is the recorded case. It needs the suite's strategies and the
Hypothesis version the campaign ran with. Exit status: 0 when every case came back, else 1."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from fuzz.store.findings import iter_finding_files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.engine.regenerate", description=__doc__.split("\n\n")[0])
    parser.add_argument("findings", nargs="+", type=Path, help="finding files or campaign directories")
    parser.add_argument("--json", action="store_true", help="also print each regenerated case (one JSON line)")
    args = parser.parse_args(argv)
    from fuzz.engine.stream import regenerate

    status = 0
    for path, finding in iter_finding_files(args.findings, lambda m: print(f"warning: {m}", file=sys.stderr)):
        o = finding.origin
        try:
            case = regenerate(o)
        except (ValueError, KeyError) as e:
            print(f"{path}: cannot draw it again: {e}")
            status = 1
            continue
        same = json.dumps(case, sort_keys=True) == json.dumps(finding.case, sort_keys=True)
        print(f"{path}: seed {o['seed']}, session {o['session']}, worker {o['worker']}, round {o['round']}, "
              f"case {o['index']}: " + ("the recorded case" if same else "a DIFFERENT case (other strategies or "
                                         "Hypothesis version?)"))
        if args.json:
            print(json.dumps(case, sort_keys=True))
        status |= not same
    return status


if __name__ == "__main__":
    sys.exit(main())
