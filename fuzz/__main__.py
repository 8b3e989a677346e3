"""`python -m fuzz`: fuzzing campaigns, replay, repro export and reports (see fuzz/cli.py)."""

import sys

from fuzz.cli import main

if __name__ == "__main__":
    sys.exit(main())
