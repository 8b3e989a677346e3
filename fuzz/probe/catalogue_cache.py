"""One template catalogue per installed inductor, shared by every worker of a machine.

Reading the catalogue (template_catalogue: a fresh process imports every
inductor kernel module) costs about 10 s of CPU; each worker, and each worker restarted after a
crash, used to pay it. With `MM_FUZZ_CATALOGUE_DIR` set (campaign and bench workers), the first
worker to need it reads it in a fresh process as before and stores it under a key of the
installed torch (version, path, and the size and mtime of every inductor source file), so an
edited or reinstalled inductor gets a new one; the others wait on a lock and load it. Still a
different process from the worker that compiles: the cross-process src_hash check stands."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.abc import InspectLoader
from pathlib import Path
from types import ModuleType

from fuzz.probe import list_templates
from fuzz.probe.observe import ObserverUnavailable

CATALOGUE_DIR_ENV = "MM_FUZZ_CATALOGUE_DIR"

Catalogue = dict[str, dict[str, str | None]]


def _source(module: ModuleType) -> str:
    """`module`'s source, from its loader (a standalone repro's vendored modules have no file)."""
    loader = module.__spec__.loader if module.__spec__ else None
    source = loader.get_source(module.__name__) if isinstance(loader, InspectLoader) else None
    if source is None:
        raise ObserverUnavailable(f"the source of {module.__name__} cannot be read: the template catalogue is unknown")
    return source


def template_catalogue(prelude: str = "") -> dict[str, dict[str, str | None]]:
    """Every Triton template inductor defines, read in a fresh process (fuzz.probe.list_templates):
    uid -> its `src_hash` and the sha256 of the source it was built from (captured as the template
    was constructed).

    `prelude` runs before inductor's templates are imported (tests use it to plant bugs)."""
    proc = subprocess.run([sys.executable, "-c", _source(list_templates), prelude], check=False, capture_output=True,
                          text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=600)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ObserverUnavailable(f"could not list inductor's Triton templates in a fresh process: {last}")
    catalogue = json.loads(proc.stdout.strip().splitlines()[-1])
    if not catalogue:
        raise ObserverUnavailable("inductor defines no Triton templates on this torch: src_hash cannot be checked")
    return catalogue


def inductor_fingerprint() -> str:
    """A key that changes whenever the installed torch or any of inductor's source files does."""
    import torch

    root = Path(torch.__file__).parent / "_inductor"
    digest = hashlib.sha256(f"{torch.__version__}\0{root}".encode())
    for path in sorted(root.rglob("*.py")):
        stat = path.stat()
        digest.update(f"\0{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def shared_catalogue() -> Catalogue:
    """The catalogue from the shared directory (read and stored there by the first worker to ask),
    else read in a fresh process as before."""
    directory = os.environ.get(CATALOGUE_DIR_ENV)
    if not directory:
        return template_catalogue()
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"catalogue-{inductor_fingerprint()}.json"
    with _locked(path.with_suffix(".lock")):
        with contextlib.suppress(OSError, ValueError):
            stored = json.loads(path.read_text())
            if isinstance(stored, dict) and stored:
                return stored
        catalogue = template_catalogue()
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(catalogue))
        partial.replace(path)
        return catalogue
