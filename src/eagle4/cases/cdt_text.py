"""Parser of the public ``key count v1 .. vN`` text case format (the CUDA goldens' format).

One array per line: ``key count v1 ... vcount``; ``#`` starts a comment line; blank lines are
ignored. Keys are KERNELS.md argument names:
* ``<name>``: a pure input, or the prior contents of an in/out / output buffer;
* ``initial_<name>``: prior contents of an in/out / output buffer;
* ``expected_<name>``: the kernel's output;
* ``meta``: the scalar arguments, positionally, with or without a leading count:
  K1 ``meta B K W H cc`` (the order the original dump script wrote; ``H`` is the hidden size,
  not an ABI scalar), K2 ``meta 10 B K W Ic cc Vn d I N M``;
* ``<scalar_name> 1 value``: any scalar argument by name (e.g. ``use_hot_token_id 1 1``); for
  kernels other than K1/K2 this is the only way to give scalars.
Keys that the public dumps carry but that are not arguments of the kernel (for K2:
``score_*`` copies of the score kernel's outputs, ``topk_tokens_sampling_input``) are skipped
and listed in ``Case.meta["ignored_keys"]``. Any other key is an error.

Flat values are reshaped to the spec shapes; dtypes follow the spec (hidden and logit arrays
are f32 in this format, as in the CUDA goldens). Every error is a ``CdtTextError`` (a
ValueError) naming the file and line.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np

from eagle4.cases import Case
from eagle4.spec import KernelSpec, kernel_spec

# positional meta fields per kernel; "H" is bound as a shape symbol, everything else is a scalar argument
META_FIELDS: dict[str, tuple[str, ...]] = {
    "draft_tree_score": ("batch_size", "node_top_k", "tree_width", "H", "cumu_count"),
    "update_draft_state": ("batch_size", "node_top_k", "tree_width", "input_count", "cumu_count", "verify_num",
                           "curr_depth", "max_input_size", "max_node_count", "max_verify_num"),
}
# keys of the public dumps that are not arguments of the kernel: skipped and reported
IGNORED_KEYS: dict[str, tuple[str, ...]] = {
    "draft_tree_score": ("topk_tokens_sampling_input",),
    "update_draft_state": ("score_curr_layer_scores", "score_output_hidden_states", "score_sort_layer_scores",
                           "score_sort_layer_indices", "score_cache_topk_indices",
                           "score_parent_indices_in_layer", "topk_tokens_sampling_input"),
}
# scalars that may be absent from a file, with the value the original kernel ran with
SCALAR_DEFAULTS: dict[str, dict] = {"draft_tree_score": {"use_hot_token_id": False}}

_INT = re.compile(r"^[+-]?\d+$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CdtTextError(ValueError):
    """A text case file is malformed or does not fit the kernel spec."""


def _err(src: str, line: int | None, msg: str) -> CdtTextError:
    return CdtTextError(f"{src}:{line}: {msg}" if line else f"{src}: {msg}")


def _parse_int(tok: str, src: str, line: int, key: str) -> int:
    if not _INT.match(tok):
        raise _err(src, line, f"{key}: bad integer {tok!r}")
    return int(tok)


_NONFINITE = {"inf", "+inf", "-inf", "infinity", "+infinity", "-infinity", "nan", "+nan", "-nan"}


def _parse_float(tok: str, src: str, line: int, key: str, dtype=np.float64) -> float:
    """``tok`` as a float of ``dtype``; a finite decimal that overflows it (1e400, 3.5e38 for f32) is an
    error, never stored as inf (only an explicit inf/nan token gives one)."""
    try:
        v = float(tok)  # 17-digit decimals of f32 values round-trip exactly through f64
    except ValueError:
        raise _err(src, line, f"{key}: bad number {tok!r}") from None
    if tok.strip().lower() not in _NONFINITE:
        with np.errstate(over="ignore"):
            stored = np.array(v, dtype=np.float64).astype(dtype)
        if not math.isfinite(v) or not np.isfinite(stored):
            raise _err(src, line, f"{key}: {tok} does not fit {np.dtype(dtype).name} (it would be stored as inf)")
    return v


def _storage_dtype(dtype: str) -> np.dtype:
    # this format carries hidden/logit arrays as f32 (the CUDA goldens are f32)
    return np.dtype("float32") if dtype in ("hidden", "logit") else np.dtype(dtype)


def _convert(tokens: list[str], dtype: np.dtype, src: str, line: int, key: str) -> np.ndarray:
    if dtype.kind == "f":
        return np.array([_parse_float(t, src, line, key, dtype) for t in tokens], dtype=np.float64).astype(dtype)
    vals = [_parse_int(t, src, line, key) for t in tokens]
    if dtype == np.bool_:
        bad = [v for v in vals if v not in (0, 1)]
        if bad:
            raise _err(src, line, f"{key}: bool values must be 0 or 1, found {bad[0]}")
        return np.array(vals, dtype=np.uint8).astype(np.bool_)
    info = np.iinfo(dtype)
    bad = [v for v in vals if not info.min <= v <= info.max]
    if bad:
        raise _err(src, line, f"{key}: value {bad[0]} does not fit {dtype.name}")
    return np.array(vals, dtype=dtype)


def _shape(spec: KernelSpec, name: str, env: dict[str, int], count: int, src: str, line: int) -> tuple[int, ...]:
    """Spec shape of ``name``; one unbound free symbol (H, Vh, ...) is inferred from the count."""
    exprs = spec.arg(name).shape
    dims: list[int | None] = []
    for e in exprs:
        if e == "*":
            dims.append(None)
            continue
        try:
            dims.append(int(eval(e, {"__builtins__": {}}, dict(env))))  # expressions come from spec.py
        except NameError:
            dims.append(None)
    unknown = [i for i, d in enumerate(dims) if d is None]
    if len(unknown) > 1:
        raise _err(src, line, f"{name}: cannot infer shape {exprs} from {count} values (unbound "
                              f"{[exprs[i] for i in unknown]})")
    if unknown:
        known = math.prod(d for d in dims if d is not None)
        if known == 0 or count % known:
            raise _err(src, line, f"{name}: {count} values do not fit shape ({', '.join(exprs)})")
        i = unknown[0]
        dims[i] = count // known
        if _IDENT.match(exprs[i]):
            env[exprs[i]] = dims[i]
    shape = tuple(int(d) for d in dims)
    if math.prod(shape) != count:
        raise _err(src, line, f"{name}: spec shape ({', '.join(exprs)}) = {shape} needs {math.prod(shape)} values, "
                              f"the line has {count}")
    return shape


def parse_cdt_text(path: str | Path, kernel: str) -> Case:
    """Read one text case file for ``kernel``; returns a Case with ``expected`` and provenance ``meta``."""
    path = Path(path)
    src = str(path)
    if not path.is_file():
        raise _err(src, None, "no such file")
    spec = kernel_spec(kernel)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _err(src, None, f"not a UTF-8 text file ({e})") from None
    tensor_names = {a.name for a in spec.tensors}
    scalar_args = {a.name: a for a in spec.scalars}
    ignored_known = set(IGNORED_KEYS.get(spec.key, ()))

    entries: dict[str, tuple[int, list[str]]] = {}  # key -> (line, value tokens)
    meta_line: tuple[int, list[str]] | None = None
    ignored: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        toks = s.split()
        key = toks[0]
        if key == "meta":
            if meta_line is not None:
                raise _err(src, lineno, f"second 'meta' line (first at line {meta_line[0]})")
            meta_line = (lineno, toks[1:])
            continue
        if len(toks) < 2:
            raise _err(src, lineno, f"{key}: missing value count (expected 'key count v1 .. vcount')")
        count = _parse_int(toks[1], src, lineno, f"{key} count")
        vals = toks[2:]
        if count < 0 or count != len(vals):
            raise _err(src, lineno, f"{key}: declares {count} values, the line has {len(vals)} "
                                    "(corrupt count or truncated file)")
        if key in ignored_known or (spec.key == "update_draft_state" and key.startswith("score_")):
            ignored.append(key)
            continue
        base = key.removeprefix("expected_").removeprefix("initial_")
        if base not in tensor_names and key not in scalar_args:
            raise _err(src, lineno, f"unknown key {key!r}: not an argument of {spec.op} ({spec.section} of "
                                    f"KERNELS.md); arguments: {[a.name for a in spec.args]}")
        if key in entries:
            raise _err(src, lineno, f"duplicate key {key!r} (first at line {entries[key][0]})")
        entries[key] = (lineno, vals)

    # scalars: positional meta (optionally count-prefixed), then per-name scalar lines
    params: dict = {}
    env: dict[str, int] = {}
    fields = META_FIELDS.get(spec.key)
    if meta_line is not None:
        lineno, vals = meta_line
        if fields is None:
            raise _err(src, lineno, f"'meta' is not defined for {spec.key}; give scalars as '<name> 1 value'")
        if len(vals) == len(fields) + 1 and vals and vals[0] == str(len(fields)):
            vals = vals[1:]  # leading count
        if len(vals) != len(fields):
            raise _err(src, lineno, f"meta: expected {len(fields)} values ({' '.join(fields)}), optionally preceded "
                                    f"by the count {len(fields)}; found {len(meta_line[1])}")
        for f, v in zip(fields, vals, strict=True):
            iv = _parse_int(v, src, lineno, f"meta {f}")
            if f in scalar_args:
                params[f] = iv
            else:
                env[f] = iv
    for name, a in scalar_args.items():
        if name not in entries:
            continue
        lineno, vals = entries.pop(name)
        if len(vals) != 1:
            raise _err(src, lineno, f"{name}: a scalar takes exactly 1 value, found {len(vals)}")
        if name in params:
            raise _err(src, lineno, f"{name}: given both in 'meta' and on its own line")
        if a.dtype == "f32":
            params[name] = float(np.float32(_parse_float(vals[0], src, lineno, name, np.float32)))
        elif a.dtype == "bool":
            v = _parse_int(vals[0], src, lineno, name)
            if v not in (0, 1):
                raise _err(src, lineno, f"{name}: a bool must be 0 or 1, found {v}")
            params[name] = bool(v)
        else:
            params[name] = _parse_int(vals[0], src, lineno, name)
    for name, v in SCALAR_DEFAULTS.get(spec.key, {}).items():
        params.setdefault(name, v)
    missing = [n for n in scalar_args if n not in params]
    if missing:
        hint = f" (a 'meta' line: {' '.join(fields)})" if fields else ""
        raise _err(src, None, f"missing scalar argument(s) {missing}{hint}")
    for a in spec.scalars:
        if a.dtype != "f32":
            env[a.symbol or a.name] = int(params[a.name])
    for sym, expr in spec.derived.items():
        env[sym] = int(eval(expr, {"__builtins__": {}}, dict(env)))

    # arrays, in file order
    inputs: dict[str, np.ndarray] = {}
    expected: dict[str, np.ndarray] = {}
    for key, (lineno, vals) in sorted(entries.items(), key=lambda kv: kv[1][0]):
        if key.startswith("expected_"):
            name, bucket = key[len("expected_"):], expected
            if not spec.arg(name).is_output:
                raise _err(src, lineno, f"{key}: {name} is an input of {spec.op}, it has no expected value")
        else:
            name, bucket = key.removeprefix("initial_"), inputs
            if key.startswith("initial_") and spec.arg(name).role == "in":
                raise _err(src, lineno, f"{key}: {name} is a pure input; write it as '{name}'")
            if name in inputs:
                raise _err(src, lineno, f"{key}: {name} given twice (as '{name}' and 'initial_{name}')")
        a = spec.arg(name)
        shape = _shape(spec, name, env, len(vals), src, lineno)
        bucket[name] = _convert(vals, _storage_dtype(a.dtype), src, lineno, key).reshape(shape)

    required = [a.name for a in spec.args if a.role in ("in", "inout") and not a.optional]
    if spec.key == "draft_tree_score" and params.get("use_hot_token_id"):
        required += ["topk_tokens_sampling", "hot_token_id"]
    if spec.key == "update_draft_state":
        required += [a.name for a in spec.args if a.role == "inout"]
    missing_arrays = sorted({n for n in required if n not in inputs})
    if missing_arrays:
        raise _err(src, None, f"missing required array(s) {missing_arrays} for {spec.op} (truncated file?)")
    if not expected:
        raise _err(src, None, "no expected_<name> arrays: nothing to compare against")

    sha = hashlib.sha256(raw).hexdigest()
    note = f"imported from {path.name} (cdt-text)"
    if ignored:
        note += f"; ignored keys not in the ABI: {', '.join(ignored)}"
    return Case(kernel=spec.key, case_id=f"{spec.key}/cdt/{path.stem}", params=params, inputs=inputs,
                seed=None, tags=("golden", "cdt-text"), note=note, expected=expected,
                meta={"format": "cdt-text", "source": path.name, "source_sha256": sha, "ignored_keys": ignored,
                      "shape_symbols": {k: v for k, v in env.items() if k not in {a.symbol for a in spec.scalars}}})
