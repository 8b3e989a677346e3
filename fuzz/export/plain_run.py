"""Run one plain repro script as `python script.py` would and record how it ended:
`python -m fuzz.export.plain_run SCRIPT RESULT` writes to RESULT, as JSON, the status ("passed";
"mismatch": the script's own assertion failed; "raised") with the exception's type, message and
innermost inductor frame, prints the traceback `python SCRIPT` would, and exits 1 unless it passed.
fuzz.export.plain_search starts it in a fresh process per candidate form."""

from __future__ import annotations

import json
import runpy
import sys
import traceback
from typing import Any

from fuzz.probe.failures import describe_failure, innermost_frame


def main(script: str, result_path: str) -> int:
    result: dict[str, Any] = {"status": "passed"}
    try:
        runpy.run_path(script, run_name="__main__")
    except Exception as e:  # noqa: BLE001 - whatever the script raises is its outcome
        failure, fs = describe_failure(e), innermost_frame(e)
        mine = isinstance(e, AssertionError) and not failure.frame
        result = {"status": "mismatch" if mine else "raised", "type": failure.type, "message": failure.message,
                  "frame": failure.frame, "location": f"{fs.filename}:{fs.lineno}" if fs else ""}
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next  # the traceback `python script.py` prints: from the script's own frame on
        traceback.print_exception(type(e), e, tb)
    with open(result_path, "w") as f:
        json.dump(result, f)
    return 0 if result["status"] == "passed" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
