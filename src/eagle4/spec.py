"""Machine-readable form of KERNELS.md (the kernel specification, outside this repository): the seven P0 kernels' ABIs.

This is the single place that knows every kernel's argument order, roles, shapes, dtypes and
parity classes. The reference, every backend, the dump format, the importers and the parity
comparator read it; none of them re-declares an argument list.

Shapes are tuples of expressions over the kernel's symbols (the scalar arguments' symbols,
the kernel's derived symbols and free symbols such as ``H`` that are bound from the first
array that carries them). ``"*"`` is a data-dependent length (a cap the caller chooses; the
kernel checks it at run time).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal

Role = Literal["in", "inout", "out", "scalar"]

# Logical dtypes. "hidden" is one of f16/bf16/f32 (bit-copied, never converted);
# "logit" is f32, or f16/bf16 upcast exactly by K5.
HIDDEN_DTYPES = ("float16", "bfloat16", "float32")
LOGIT_DTYPES = ("float32", "float16", "bfloat16")
# The one element type the uniform C ABI (hls/include/eagle4_capi.h) carries a dtype class in: every
# member widens to it exactly (§5.3), so a caller widens before the call. Classes not named here
# ("hidden") are bit-copied in their own dtype.
C_ABI_DTYPE = {"logit": "float32"}
SCALAR_KINDS = ("int", "bool", "f32")


@dataclass(frozen=True)
class Arg:
    name: str
    role: Role
    dtype: str  # numpy dtype name, "hidden", "logit", or a scalar kind for role == "scalar"
    shape: tuple[str, ...] = ()
    symbol: str | None = None  # scalars: the symbol used in shape expressions (B, K, ...)
    optional: bool = False
    abi: bool = True  # False: an extension argument that is not part of the CUDA op's ABI
    parity: Literal["EXACT", "TOL"] = "EXACT"
    rtol: float = 0.0
    atol: float = 0.0
    doc: str = ""

    @property
    def is_tensor(self) -> bool:
        return self.role != "scalar"

    @property
    def is_output(self) -> bool:
        return self.role in ("inout", "out")


@dataclass(frozen=True)
class KernelSpec:
    key: str  # canonical short name used across the harness (folders, CLI, reports)
    number: int  # K1..K7
    op: str  # the CUDA op name
    args: tuple[Arg, ...]
    derived: dict[str, str] = field(default_factory=dict)  # symbol -> expression
    section: str = ""

    @property
    def label(self) -> str:
        return f"K{self.number}"

    def arg(self, name: str) -> Arg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(f"{self.key}: no argument named {name!r}; arguments: {[a.name for a in self.args]}")

    @property
    def scalars(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.role == "scalar")

    @property
    def tensors(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.is_tensor)

    @property
    def inputs(self) -> tuple[Arg, ...]:
        """Tensors whose prior contents the kernel may read (pure inputs and in/out buffers)."""
        return tuple(a for a in self.args if a.role in ("in", "inout"))

    @property
    def outputs(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.is_output)

    @property
    def abi_order(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.abi)


def _s(name: str, symbol: str, kind: str = "int", doc: str = "") -> Arg:
    return Arg(name, "scalar", kind, symbol=symbol, doc=doc)


def _i(name: str, dtype: str, *shape: str, **kw) -> Arg:
    return Arg(name, "in", dtype, tuple(shape), **kw)


def _io(name: str, dtype: str, *shape: str, **kw) -> Arg:
    return Arg(name, "inout", dtype, tuple(shape), **kw)


def _o(name: str, dtype: str, *shape: str, **kw) -> Arg:
    return Arg(name, "out", dtype, tuple(shape), **kw)


DRAFT_TREE_SCORE = KernelSpec(
    key="draft_tree_score",
    number=1,
    op="draft_tree_layer_score_index_gen_op",
    section="§1",
    derived={"C": "W*K"},
    args=(
        _i("topk_probas_sampling", "float32", "B", "C"),
        _io("topk_tokens_sampling", "int64", "B", "C", optional=True,
            doc="remapped in place when use_hot_token_id; required then"),
        _i("last_layer_scores", "float32", "B", "W"),
        _o("curr_layer_scores", "float32", "B", "C"),
        _o("sort_layer_scores", "float32", "B", "C"),
        _o("sort_layer_indices", "int64", "B", "C"),
        _o("cache_topk_indices", "int64", "B", "K"),
        _o("parent_indices_in_layer", "int64", "B", "K"),
        _i("input_hidden_states", "hidden", "B*W", "H"),
        _o("output_hidden_states", "hidden", "B", "K", "H"),
        _i("hot_token_id", "int64", "Vh", optional=True, doc="required when use_hot_token_id"),
        _s("batch_size", "B"),
        _s("node_top_k", "K"),
        _s("tree_width", "W"),
        _s("cumu_count", "cc"),
        _s("use_hot_token_id", "hot", "bool"),
        _o("output_tokens", "int64", "B", "K", optional=True, abi=False,
           doc="HLS extension: (remapped) token of each top-K candidate"),
    ),
)

UPDATE_DRAFT_STATE = KernelSpec(
    key="update_draft_state",
    number=2,
    op="update_cumu_draft_state",
    section="§2",
    derived={"C": "W*K"},
    args=(
        _i("topk_probas", "float32", "B", "C", doc="in_scores: K1's curr_layer_scores in the draft flow (D5)"),
        _i("topk_tokens", "int64", "B", "C"),
        _i("sorted_scores", "float32", "B", "C"),
        _i("sorted_indexs", "int64", "B", "C"),
        _i("parent_indexs", "int64", "B", "K"),
        _i("topk_indexs", "int64", "B", "W"),
        _i("input_tree_mask", "bool", "B", "W", "Ic-1"),
        _s("batch_size", "B"),
        _s("node_top_k", "K"),
        _s("tree_width", "W"),
        _s("input_count", "Ic"),
        _s("cumu_count", "cc"),
        _s("verify_num", "Vn"),
        _s("curr_depth", "d"),
        _s("max_input_size", "I"),
        _s("max_node_count", "N"),
        _s("max_verify_num", "M"),
        _io("cumu_tokens", "int64", "B", "N"),
        _io("cumu_scores", "float32", "B", "N"),
        _io("cumu_deltas", "int64", "B", "N"),
        _io("prev_indexs", "int64", "B", "N"),
        _io("next_indexs", "int64", "B", "N"),
        _io("side_indexs", "int64", "B", "N"),
        _o("output_scores", "float32", "B", "K"),
        _o("output_tokens", "int64", "B", "K"),
        _io("work_scores", "float32", "B", "M+K"),
        _io("sort_scores", "float32", "B", "M"),
        _io("output_tree_mask", "bool", "B", "K", "I+1"),
    ),
)

WORK_DELTAS = KernelSpec(
    key="work_deltas",
    number=3,
    op="calculate_work_deltas",
    section="§3",
    args=(
        _i("work_scores", "float32", "B", "row_stride"),
        _s("batch_size", "B"),
        _s("node_count", "n0"),
        _s("node_top_k", "K"),
        _s("verify_num", "Vb"),
        _s("row_stride", "row_stride"),
        _o("work_deltas", "float32", "K+1"),
        _o("per_req_deltas", "float32", "B", "K+1", optional=True),
    ),
)

TREE_MASK = KernelSpec(
    key="tree_mask",
    number=4,
    op="fused_tree_mask_operator",
    section="§4",
    args=(
        _i("seq_lens", "int64", "B"),
        _i("req_pool_indices", "int64", "B"),
        _i("req_to_token", "int32", "P", "S_max"),
        _s("S_max", "S_max"),
        _i("tree_cache_locs", "int64", "B", "T"),
        _i("tree_parent", "int64", "B", "T"),
        _s("B", "B"),
        _s("T", "T"),
        _s("Q", "Q"),
        _s("write_bool_mask", "write_bool_mask", "bool"),
        _o("qo_indptr", "int32", "B+1"),
        _o("kv_indptr", "int32", "B+1"),
        _o("kv_indices", "int32", "*", doc="cap B*(max L + T); nothing past kv_indptr[B] is written"),
        _o("positions", "int64", "B", "Q"),
        _o("mask_indptr_bits", "int32", "B+1"),
        _o("mask_indptr_bytes", "int32", "B+1"),
        _o("packed_mask", "uint8", "*", doc="cap B*ceil(Q*(max L + T)/8)"),
        _o("mask_bool", "bool", "*", optional=True, doc="cap B*Q*(max L + T); only when write_bool_mask"),
    ),
)

LOGITS_TO_PROBAS = KernelSpec(
    key="logits_to_probas",
    number=5,
    op="convert_logits_to_probas",
    section="§5",
    derived={"R": "B*G"},
    args=(
        _i("logits", "logit", "R", "V"),
        _i("temperatures", "float32", "B"),
        _s("rows_per_req", "G"),
        _s("write_probas", "write_probas", "bool"),
        _o("probas", "float32", "R", "V", parity="TOL", rtol=5e-5, atol=1e-10,
           doc="TOL on sampling rows; greedy rows and untouched buffers EXACT (comparator hook)"),
        _o("argmax_ids", "int64", "R"),
        _o("is_greedy", "uint8", "B"),
    ),
)

REJECT_SAMPLE = KernelSpec(
    key="reject_sample",
    number=6,
    op="draft_tree_reject_sample",
    section="§6",
    args=(
        _i("candidates", "int64", "B", "Q"),
        _i("retrive_index", "int64", "B", "Q"),
        _i("retrive_next_token", "int64", "B", "Q"),
        _i("retrive_next_sibling", "int64", "B", "Q"),
        _i("target_probs", "float32", "B", "Q", "V"),
        _i("target_predict", "int64", "B", "Q"),
        _i("is_greedy", "uint8", "B"),
        _i("coins", "float32", "B", "Q"),
        _i("final_coins", "float32", "B"),
        _s("threshold_single", "threshold_single", "f32"),
        _s("threshold_acc", "threshold_acc", "f32"),
        _s("B", "B"),
        _s("Q", "Q"),
        _s("S", "S"),
        _s("V", "V"),
        _o("predicts", "int32", "B*Q"),
        _o("accept_index", "int32", "B", "S"),
        _o("accept_length", "int32", "B"),
    ),
)

UPDATE_VERIFY = KernelSpec(
    key="update_verify",
    number=7,
    op="update_verify_result",
    section="§7",
    args=(
        _i("accept_index", "int32", "B", "S"),
        _i("accept_length", "int32", "B"),
        _i("predicts", "int32", "B*Q"),
        _i("finish_pos", "int32", "B"),
        _i("seq_lens", "int64", "B"),
        _i("req_pool_indices", "int64", "B"),
        _io("req_to_token", "int32", "P", "S_max"),
        _i("out_cache_loc", "int64", "B*Q"),
        _i("hidden_states", "hidden", "B*Q", "H"),
        _i("verify_node_ids", "int64", "B", "Q", optional=True),
        _s("B", "B"),
        _s("Q", "Q"),
        _s("S", "S"),
        _s("H", "H"),
        _s("S_max", "S_max"),
        _o("accept_index_out", "int32", "B", "S"),
        _o("accept_length_out", "int32", "B"),
        _o("accept_indptr", "int32", "B+1"),
        _o("accepted_flat", "int32", "B*S"),
        _o("verified_id", "int32", "B*S"),
        _o("evict_mask", "bool", "B*Q"),
        _o("free_slots", "int64", "B*Q"),
        _o("seq_lens_out", "int64", "B"),
        _o("accepted_node_ids", "int64", "B*S", optional=True, doc="only when verify_node_ids is given"),
        _o("unfinished_count", "int32", "1"),
        _o("unfinished_index", "int64", "B"),
        _o("next_accept_length", "int32", "B"),
        _o("next_indptr", "int32", "B+1"),
        _o("next_verified_id", "int32", "B*S"),
        _o("next_hidden", "hidden", "B*S", "H", doc="rows past N_unf neither written nor compared"),
        _o("next_positions", "int64", "B*S"),
        _o("next_seq_lens", "int64", "B"),
        _o("next_req_pool_indices", "int64", "B"),
        _o("next_root_token", "int32", "B"),
        _o("next_last_flat", "int32", "B"),
    ),
)

KERNELS: dict[str, KernelSpec] = {
    k.key: k
    for k in (DRAFT_TREE_SCORE, UPDATE_DRAFT_STATE, WORK_DELTAS, TREE_MASK,
              LOGITS_TO_PROBAS, REJECT_SAMPLE, UPDATE_VERIFY)
}
KERNEL_ORDER: tuple[str, ...] = tuple(KERNELS)


def kernel_spec(name: str) -> KernelSpec:
    """Look a kernel up by its key, its op name, or K1..K7 (case-insensitive)."""
    low = name.strip().lower()
    for k in KERNELS.values():
        if low in (k.key, k.op.lower(), k.label.lower()):
            return k
    raise KeyError(
        f"unknown kernel {name!r}; known: "
        + ", ".join(f"{k.label}={k.key} ({k.op})" for k in KERNELS.values())
    )


# ---------------------------------------------------------------------------------------
# Shape and dtype validation against the spec


class SpecError(ValueError):
    """An array or scalar does not meet the kernel spec (shape, dtype, missing argument)."""


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def symbols_from_params(spec: KernelSpec, params: dict) -> dict[str, int]:
    env: dict[str, int] = {}
    for a in spec.scalars:
        if a.name in params and a.dtype != "f32":
            env[a.symbol or a.name] = int(params[a.name])
    return env


@functools.cache
def _compiled(expr: str):
    return compile(expr, "<shape>", "eval")


def _eval(expr: str, env: dict[str, int]) -> int:
    return int(eval(_compiled(expr), {"__builtins__": {}}, dict(env)))  # expressions come from this module only


def shape_of(arg: Arg, env: dict[str, int]) -> tuple[int, ...]:
    """The concrete shape of ``arg`` under the bound symbols ``env`` (no ``*`` dimension allowed)."""
    return tuple(_eval(e, env) for e in arg.shape)


def check_arrays(spec: KernelSpec, arrays: dict, params: dict, *, role: str = "inputs") -> dict[str, int]:
    """Validate shapes and dtypes of ``arrays`` (numpy) against ``spec``; return the bound symbols.

    ``role`` is "inputs" (pure inputs and prior buffer contents) or "outputs" (expected or produced
    outputs). Raises SpecError naming the argument, the expected and the actual shape/dtype.
    """
    from eagle4 import dtypes as dt

    missing = [a.name for a in spec.scalars if a.name not in params]
    if missing:
        raise SpecError(f"{spec.key}: missing scalar argument(s) {missing}")
    env = symbols_from_params(spec, params)
    pending = dict(spec.derived)
    for _ in range(len(pending) + 1):
        for sym, expr in list(pending.items()):
            try:
                env[sym] = _eval(expr, env)
                del pending[sym]
            except NameError:
                pass
    known = {a.name: a for a in spec.tensors}
    for name, arr in arrays.items():
        if name not in known:
            raise SpecError(f"{spec.key}: {name!r} is not an argument of {spec.op}; tensors: {sorted(known)}")
        a = known[name]
        logical = dt.logical_dtype(arr)
        allowed = {"hidden": HIDDEN_DTYPES, "logit": LOGIT_DTYPES}.get(a.dtype, (a.dtype,))
        if logical not in allowed:
            raise SpecError(f"{spec.key}: {name} must have dtype {'/'.join(allowed)}, got {logical}")
        if len(a.shape) != arr.ndim:
            raise SpecError(f"{spec.key}: {name} must have {len(a.shape)} dimension(s) {a.shape}, got shape {arr.shape}")
        for dim, expr in zip(arr.shape, a.shape, strict=False):
            if expr == "*":
                continue
            if _IDENT.match(expr) and expr not in env:
                env[expr] = int(dim)  # free symbol bound by the first array that has it
                continue
            try:
                want = _eval(expr, env)
            except NameError:
                continue  # depends on a symbol not bound yet; checked by the kernel itself
            if want != dim:
                raise SpecError(
                    f"{spec.key}: {name} must have shape ({', '.join(a.shape)}) = "
                    f"{tuple(_eval(e, env) if e != '*' and not (_IDENT.match(e) and e not in env) else e for e in a.shape)}, got {arr.shape}"
                )
    # hidden dtypes must agree between the input and output hidden tensors
    hidden = {n: dt.logical_dtype(arrays[n]) for n, a in known.items() if a.dtype == "hidden" and n in arrays}
    if len(set(hidden.values())) > 1:
        raise SpecError(f"{spec.key}: hidden tensors must share one dtype, got {hidden}")
    if role == "inputs":
        for a in spec.inputs:
            if a.name not in arrays and not a.optional:
                raise SpecError(f"{spec.key}: missing input {a.name!r}")
    return env
