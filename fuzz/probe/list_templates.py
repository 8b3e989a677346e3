"""Print, as one JSON line, every Triton template inductor defines: uid -> its `src_hash` and the
sha256 of the source it was built from (captured as each template is constructed).

Run in a fresh process, as `python -c <this module's source> PRELUDE`: fuzz.probe.catalogue_cache
reads the source through the module's loader, so a standalone repro, where the suite's modules are
vendored and not importable by a child, runs it too. It needs only torch. PRELUDE is Python source
run before inductor's kernel modules are imported (tests plant bugs with it)."""

from __future__ import annotations

import hashlib
import importlib
import json
import pkgutil
import sys


def main(prelude: str) -> None:
    from torch._inductor.codegen.common import KernelTemplate

    sources: dict[str, str] = {}
    from_string = KernelTemplate._template_from_string

    def capture(source: str) -> object:
        caller = sys._getframe(1)
        if caller.f_code.co_name == "__init__" and isinstance(caller.f_locals.get("name"), str):
            sources.setdefault(caller.f_locals["name"], source)
        return from_string(source)

    KernelTemplate._template_from_string = staticmethod(capture)  # type: ignore[method-assign]  # the hook
    exec(prelude, {})  # noqa: S102 - the caller's own source (tests plant bugs with it)
    import torch._inductor.kernel as kernels
    from torch._inductor.select_algorithm import TritonTemplate

    for mod in pkgutil.walk_packages(kernels.__path__, kernels.__name__ + "."):
        try:
            importlib.import_module(mod.name)
        except ImportError:  # optional backends (e.g. CUTLASS bindings) absent on this machine
            pass
    out = {}
    for name, t in TritonTemplate.all_templates.items():
        src = sources.get(name)
        out[t.uid] = {"src_hash": t.src_hash,
                      "source_sha256": None if src is None else hashlib.sha256(src.encode("utf-8")).hexdigest()}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
