"""`eagle4 import-case`: turn an external case file into a harness dump (docs/dump_format.md).

* ``--format cdt-text``: the public ``key count v1..vN`` text format of the CUDA goldens (K1, K2;
  other kernels with scalars given as ``<name> 1 value`` lines);
* ``--format spec-npz``: a user's plain ``.npz`` with arrays named by ABI names, ``initial_<name>``,
  ``expected_<name>`` and a 0-d string ``meta_json``: a flat JSON object of the scalar arguments by
  name (or ``{"params": {...}}``, the form dumps use) (all kernels).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from eagle4.cases.cdt_text import parse_cdt_text
from eagle4.cases.dump import arrays_to_case, read_npz, save_dump
from eagle4.compare import missing_expectations
from eagle4.spec import kernel_spec

CUDA_ORIGINAL = {"backend": "cuda-original", "device": "GPU (per tests/data/goldens/cuda/SOURCE.md)"}


def import_case(fmt: str, path: str | Path, kernel: str | None, out: str | Path,
                backend: str | None = None, device: str | None = None, case_id: str | None = None):
    """Import ``path`` and write the dump ``out``; returns (case, sha256 of the dump payload)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    source_sha = hashlib.sha256(path.read_bytes()).hexdigest()
    if fmt == "cdt-text":
        if not kernel:
            raise ValueError("--kernel is required for --format cdt-text (e.g. draft_tree_score or K1)")
        case = parse_cdt_text(path, kernel)
        producer = dict(CUDA_ORIGINAL)
        producer["ignored_keys"] = case.meta.get("ignored_keys", [])
    elif fmt == "spec-npz":
        meta, arrays = read_npz(path)
        name = kernel or meta.get("kernel")
        if not name:
            raise ValueError(f"{path}: no --kernel given and meta_json has no 'kernel' field")
        spec = kernel_spec(name)
        if meta.get("kernel") and kernel_spec(meta["kernel"]).key != spec.key:
            raise ValueError(f"{path}: meta_json says kernel {meta['kernel']!r}, --kernel says {kernel!r}")
        case = arrays_to_case(spec, meta, arrays, str(path))
        if not meta.get("case_id"):
            case.case_id = f"{spec.key}/npz/{path.stem}"
        producer = dict(meta.get("producer") or {"backend": "user-npz", "device": "unknown (not stated in the file)"})
    else:
        raise ValueError(f"unknown format {fmt!r}; use cdt-text or spec-npz")
    if not case.expected:
        raise ValueError(f"{path}: no expected_<name> arrays: nothing to compare against")
    if backend:
        producer["backend"] = backend
    if device:
        producer["device"] = device
    if case_id:
        case.case_id = case_id
    producer.update({"import_format": fmt, "source": path.name, "source_sha256": source_sha})
    sha = save_dump(out, case, case.expected, producer)
    return case, sha


def _run(args) -> int:
    case, sha = import_case(args.format, args.file, args.kernel, args.out, args.backend, args.device, args.case_id)
    print(f"{case.case_id}: wrote {args.out} (kernel {case.kernel}, payload sha256 {sha[:16]}..., "
          f"expected outputs {sorted(case.expected)})")
    missing = missing_expectations(case.kernel, case.expected)
    if missing:
        print(f"  warning: no expected_ array for {missing}: `eagle4 check` will FAIL this dump until it has them",
              file=sys.stderr)
    if case.meta.get("ignored_keys"):
        print(f"  ignored keys not in the ABI: {', '.join(case.meta['ignored_keys'])}", file=sys.stderr)
    return 0


def register(sub) -> None:
    p = sub.add_parser("import-case", help="convert a cdt-text or spec-npz case file into a harness dump",
                       description=__doc__.split("\n\n", 1)[1] if __doc__ else None)
    p.add_argument("--format", required=True, choices=("cdt-text", "spec-npz"))
    p.add_argument("file", metavar="FILE")
    p.add_argument("--kernel", metavar="NAME", help="key, CUDA op name or K1..K7 (spec-npz: default from meta_json)")
    p.add_argument("--out", required=True, metavar="DUMP", help="dump file to write (.npz)")
    p.add_argument("--backend", help="producer backend recorded in the dump (cdt-text default: cuda-original)")
    p.add_argument("--device", help="producer device recorded in the dump")
    p.add_argument("--case-id", help="case id to record (default: <kernel>/<format>/<file stem>)")
    p.set_defaults(func=_run)
