"""The dump file: one kernel case with its inputs, prior buffer contents, scalars and expected outputs.

A dump is a plain NumPy ``.npz`` (see docs/dump_format.md):
* ``<name>``: a pure input tensor, by its KERNELS.md argument name;
* ``initial_<name>``: prior contents of an in/out buffer, or of an output buffer whose untouched
  region is compared (sentinels);
* ``expected_<name>``: the kernel's output;
* ``meta_json``: a 0-d string array holding a JSON object: the ABI's scalar arguments by name,
  flat or wrapped in ``params`` (the harness writes ``params``), and, for dumps the harness writes, ``format``, ``kernel``, ``case_id``,
  ``seed``, ``dtypes`` (logical dtype of every array; bfloat16 is stored as uint16 bits),
  ``producer`` (backend, device, library versions, git commit) and ``sha256`` of the payload.

Loading verifies the sha256 (when present) and the shapes/dtypes against the spec, and raises
``DumpError`` with the file name and the reason otherwise. A user's own ``.npz`` without the
provenance fields is the ``spec-npz`` import format (``eagle4 import-case --format spec-npz``).
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from eagle4 import dtypes as dt
from eagle4.cases import Case
from eagle4.npz_bounds import npz_violations
from eagle4.report import atomic
from eagle4.spec import KernelSpec, SpecError, check_arrays, kernel_spec

FORMAT = "eagle4-dump/1"


class DumpError(ValueError):
    """A dump file is corrupt, incomplete or does not match the kernel spec."""


def payload_sha256(kernel: str, params: dict, arrays: dict[str, np.ndarray]) -> str:
    """Hash of everything a comparison depends on: kernel, scalars, every array's dtype, shape and bytes."""
    h = hashlib.sha256()
    h.update(json.dumps({"kernel": kernel, "params": params}, sort_keys=True).encode())
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"\0{key}\0{dt.logical_dtype(a)}\0{a.shape}\0".encode())
        h.update(dt.storage_view(a).tobytes())
    return h.hexdigest()


def _split(spec: KernelSpec, inputs: dict, expected: dict) -> dict[str, np.ndarray]:
    out = {}
    for name, arr in inputs.items():
        role = spec.arg(name).role
        out[name if role == "in" else f"initial_{name}"] = arr
    for name, arr in (expected or {}).items():
        out[f"expected_{name}"] = arr
    return out


def case_arrays(case: Case) -> dict[str, np.ndarray]:
    return _split(kernel_spec(case.kernel), case.inputs, case.expected or {})


def save_dump(path: str | os.PathLike, case: Case, expected: dict[str, np.ndarray], producer: dict) -> str:
    """Write ``case`` with ``expected`` outputs atomically; returns the payload sha256."""
    spec = kernel_spec(case.kernel)
    check_scalars(spec, case.params, str(path))  # never write a dump that load_dump would refuse
    check_arrays(spec, case.inputs, case.params, role="inputs")
    check_arrays(spec, expected, case.params, role="outputs")
    arrays = _split(spec, case.inputs, expected)
    sha = payload_sha256(spec.key, case.params, arrays)
    meta = {
        "format": FORMAT,
        "kernel": spec.key,
        "op": spec.op,
        "case_id": case.case_id,
        "seed": case.seed,
        "tags": list(case.tags),
        "note": case.note,
        "params": case.params,
        "dtypes": {k: dt.logical_dtype(v) for k, v in arrays.items()},
        "producer": producer,
        "sha256": sha,
    }
    stored = {k: dt.storage_view(np.ascontiguousarray(v)) for k, v in arrays.items()}
    stored["meta_json"] = np.array(json.dumps(meta, sort_keys=True))
    with atomic.atomic_open(path, "wb") as fh:  # never leave a half-written dump
        np.savez(fh, **stored)  # stored (uncompressed) zip: the C++ testbenches read it directly
    return sha


#: the largest array entry a dump may hold (uncompressed); kernel cases are megabytes
MAX_ENTRY_BYTES = 512 << 20


def _check_entries(path: Path) -> None:
    """Refuse, before anything is inflated or allocated, an entry over :data:`MAX_ENTRY_BYTES` and an
    ``.npy`` header whose shape claims more bytes than its entry holds (``eagle4.npz_bounds``)."""
    try:
        bad = next(npz_violations(path, MAX_ENTRY_BYTES), None)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise DumpError(f"{path}: not a readable .npz dump ({type(e).__name__}: {e})") from None
    if bad is not None:
        raise DumpError(f"{path}: array {bad[0]!r}: {bad[1]}")


def read_npz(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """Raw read: (meta, arrays with logical dtypes). Raises DumpError on any corruption."""
    path = Path(path)
    if not path.is_file():
        raise DumpError(f"{path}: no such file")
    _check_entries(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            raw = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, MemoryError) as e:
        raise DumpError(f"{path}: not a readable .npz dump ({type(e).__name__}: {e})") from None
    if "meta_json" not in raw:
        raise DumpError(f"{path}: no 'meta_json' entry (a 0-d string array holding a JSON object)")
    try:
        meta = json.loads(str(raw.pop("meta_json")[()]))
    except (json.JSONDecodeError, TypeError) as e:
        raise DumpError(f"{path}: meta_json is not valid JSON ({e})") from e
    if not isinstance(meta, dict):
        raise DumpError(f"{path}: meta_json must be a JSON object, got {type(meta).__name__}")
    declared = meta.get("dtypes") or {}
    if not isinstance(declared, dict):
        raise DumpError(f"{path}: meta_json.dtypes must be a JSON object (array name -> dtype), got {json.dumps(declared)}")
    arrays = {}
    for k, v in raw.items():
        try:
            arrays[k] = dt.from_storage(v, declared.get(k, v.dtype.name))
        except ValueError as e:
            raise DumpError(f"{path}: array {k!r}: {e}") from e
    return meta, arrays


# meta_json fields that are not scalar arguments (docs/dump_format.md)
META_FIELDS = frozenset({"format", "kernel", "op", "case_id", "seed", "tags", "note", "params", "dtypes",
                         "producer", "sha256"})
_I64 = (-(2**63), 2**63 - 1)
_F32_MAX = float(np.finfo(np.float32).max)


def params_from_meta(spec: KernelSpec, meta: dict, source: str) -> dict:
    """The scalar arguments of a meta_json object, in either documented form, validated.

    * flat (docs/dump_format.md §2, issue 2): ``{"batch_size": 2, "node_top_k": 8, ...}``, optionally
      beside the other meta fields (``kernel``, ``producer``, ...);
    * wrapped (what the harness writes): ``{"params": {...}, ...}``.
    A key that is neither a scalar argument nor a meta field, or both forms at once, is refused.
    """
    scalars = {a.name for a in spec.scalars}
    flat = {k: v for k, v in meta.items() if k in scalars}
    unknown = sorted(set(meta) - scalars - META_FIELDS)
    if unknown:
        raise DumpError(f"{source}: meta_json field(s) {unknown} are neither scalar arguments of {spec.op} "
                        f"({sorted(scalars)}) nor meta fields ({sorted(META_FIELDS)})")
    if "params" in meta:
        params = meta["params"]
        if not isinstance(params, dict):
            raise DumpError(f"{source}: meta_json.params must be a JSON object of scalar arguments, "
                            f"got {type(params).__name__}")
        if flat:
            raise DumpError(f"{source}: meta_json holds scalars both flat ({sorted(flat)}) and in 'params'; use one form")
    else:
        params = flat
    check_scalars(spec, params, source)
    return dict(params)


def check_scalars(spec: KernelSpec, params: dict, source: str) -> None:
    """Every scalar argument present, of its kind: int (int64 range), bool (true/false or 0/1), f32 (a
    number in float32 range). DumpError names the file and the field; never a silent int() of 2.5."""
    extra = sorted(set(params) - {a.name for a in spec.scalars})
    if extra:
        raise DumpError(f"{source}: meta params {extra} are not scalar arguments of {spec.op}; "
                        f"expected {sorted(a.name for a in spec.scalars)}")
    missing = [a.name for a in spec.scalars if a.name not in params]
    if missing:
        raise DumpError(f"{source}: missing scalar argument(s) {missing} of {spec.op} in meta_json")
    for a in spec.scalars:
        v = params[a.name]
        if a.dtype == "bool":
            ok = isinstance(v, bool) or (type(v) is int and v in (0, 1))
            want = "true/false (or 0/1)"
        elif a.dtype == "f32":
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and not (
                np.isfinite(v) and abs(float(v)) > _F32_MAX)
            want = "a number in float32 range"
        else:
            ok = type(v) is int and _I64[0] <= v <= _I64[1]
            want = "an integer in int64 range"
        if not ok:
            raise DumpError(f"{source}: meta_json scalar {a.name!r} must be {want}, got {json.dumps(v)}")


def arrays_to_case(spec: KernelSpec, meta: dict, arrays: dict[str, np.ndarray], source: str) -> Case:
    """Sort npz entries into inputs / expected by the naming rule and validate them against the spec."""
    for field, kind in (("case_id", str), ("note", str), ("tags", list), ("seed", int), ("producer", dict),
                        ("dtypes", dict)):
        if meta.get(field) is not None and not isinstance(meta[field], kind):
            raise DumpError(f"{source}: meta_json.{field} must be a JSON {kind.__name__}, got {json.dumps(meta[field])}")
    inputs: dict[str, np.ndarray] = {}
    expected: dict[str, np.ndarray] = {}
    tensor_names = {a.name for a in spec.tensors}
    for key, arr in arrays.items():
        if key.startswith("expected_"):
            name, bucket = key[len("expected_"):], expected
        elif key.startswith("initial_"):
            name, bucket = key[len("initial_"):], inputs
        else:
            name, bucket = key, inputs
        if name not in tensor_names:
            raise DumpError(f"{source}: {key!r} names no argument of {spec.op} ({spec.section} of KERNELS.md); "
                            f"arguments: {sorted(tensor_names)}")
        a = spec.arg(name)
        if bucket is expected and not a.is_output:
            raise DumpError(f"{source}: {key!r}: {name} is an input of {spec.op}, not an output")
        if bucket is inputs and key == name and a.role != "in":
            raise DumpError(f"{source}: {key!r}: {name} is an {a.role} buffer; store its prior contents as initial_{name}")
        if bucket is inputs and key != name and a.role == "in":
            raise DumpError(f"{source}: {key!r}: {name} is a pure input; store it as {name}")
        bucket[name] = arr
    params = params_from_meta(spec, meta, source)
    try:
        check_arrays(spec, inputs, params, role="inputs")
        check_arrays(spec, expected, params, role="outputs")
    except SpecError as e:
        raise DumpError(f"{source}: {e}") from e
    return Case(
        kernel=spec.key,
        case_id=meta.get("case_id") or Path(source).stem,
        params=params,
        inputs=inputs,
        seed=meta.get("seed"),
        tags=tuple(meta.get("tags", ())),
        note=meta.get("note", ""),
        expected=expected,
        meta=meta,
    )


def load_dump(path: str | os.PathLike, *, require_sha: bool = True) -> Case:
    """Load and verify a dump; the returned Case carries ``expected`` and ``meta`` (provenance)."""
    meta, arrays = read_npz(path)
    if require_sha and meta.get("format") != FORMAT:
        raise DumpError(f"{path}: format {meta.get('format')!r} is not {FORMAT!r} "
                        "(a user's own .npz goes through 'eagle4 import-case --format spec-npz')")
    kernel = meta.get("kernel")
    if not isinstance(kernel, str):
        raise DumpError(f"{path}: meta_json.kernel must be a kernel name (string), got {json.dumps(kernel)}")
    try:
        spec = kernel_spec(kernel)
    except KeyError as e:
        raise DumpError(f"{path}: {e}") from e
    if require_sha:
        sha = payload_sha256(spec.key, meta.get("params", {}), arrays)
        if sha != meta.get("sha256"):
            raise DumpError(f"{path}: sha256 mismatch (stored {meta.get('sha256')}, payload {sha}): "
                            "the file was modified or truncated")
    return arrays_to_case(spec, meta, arrays, str(path))
