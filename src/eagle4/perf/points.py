"""Operating points of the H100 kernel bench, derived from a benchmark contract.

Every size comes from the contract the bench is given (``--contract``): the batches of its
``[[operating_points]]``, K, W, D, Vn, N, M, I of ``[decode]``, the prompt/output lengths of
``[prompts]`` and the model sizes (vocabulary, hidden size, hot draft vocabulary, dtype). Model
sizes are read from the contract's ``[model.target_arch]``/``[model.draft_arch]`` when it declares
them (dummy-weight deployment contracts), else from the target's and draft's ``config.json``. A row's ``contract_sha256`` is
the hash of the contract that produced its point.

Per batch B the points are: K1 (draft layer), K2, K3, the draft step (K1 -> K2 -> K3: one launch of the
``draft_step`` op where the source has one, else the three ops in one graph),
K4 draft (Q = W, T = 1 + (D - 1) W), K5 draft (B W rows over the hot vocabulary), K4 verify
(Q = T = Vn), K5 verify (B Vn rows over the vocabulary), K6 and K7 (Q = Vn, S = D + 1). The KV
prefix is the mid-decode context ``prompt_tokens + output_tokens // 2``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from eagle4.contract.tree_sizes import TreeSizes
from eagle4.perf import bytes_model as bm

REPO = Path(__file__).resolve().parents[3]
DEFAULT_CONTRACT = REPO / "contracts" / "default.toml"
ACCEPTED = 3  # a_b of the byte model's example: 4 committed tokens per request per cycle (K7 inputs)


@dataclass(frozen=True)
class BenchShape(TreeSizes):
    """The contract's sizes the kernel points are built from: the tree sizes and these."""

    contract_path: str
    contract_hash: str
    batches: tuple[int, ...]
    V: int
    V_hot: int
    H: int
    dtype: str
    L: int
    cov_max: float
    runs: int


def _config(path: Path) -> dict:
    f = path / "config.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def model_sizes(c) -> tuple[int, int, int]:
    """(vocab, hidden, hot draft vocab) of a contract: ``[model.target_arch]`` / ``[model.draft_arch]``
    where declared (dummy-weight deployment contracts), else the model folders' ``config.json``."""
    m = c.model
    ta, da = getattr(m, "target_arch", None), getattr(m, "draft_arch", None)
    tcfg = _config(c.resolve(m.target)) if m.target else {}
    dcfg = _config(c.resolve(m.draft)) if m.draft else {}
    V = (ta.vocab_size if ta else None) or tcfg.get("vocab_size")
    H = (ta.hidden_size if ta else None) or tcfg.get("hidden_size")
    Vh = (da.hot_vocab_size if da else None) or dcfg.get("draft_vocab_size") or V
    if not V or not H:
        raise ValueError(f"{c.source_path}: model: neither [model.target_arch] nor the target's config.json gives "
                         "vocab_size and hidden_size")
    return int(V), int(H), int(Vh)


def shape_from_contract(path: str | Path | None = None, root: str | Path | None = None) -> BenchShape:
    """Load the contract (without checking prompt files) and derive the bench's sizes. ``root``: where the
    model folders resolve (an archived contract: its archive folder; see ``load_contract``)."""
    from eagle4.contract import load_contract

    path = Path(path or DEFAULT_CONTRACT)
    c = load_contract(path, verify_files=False, root=root)
    d, m = c.decode, c.model
    V, H, Vh = model_sizes(c)
    dtype = m.dtype if m.dtype in ("float16", "bfloat16", "float32") else "float32"
    return BenchShape.from_decode(d, contract_path=str(path), contract_hash=c.sha256,
                                  batches=tuple(sorted({p.batch for p in c.operating_points})), V=V, V_hot=Vh, H=H,
                                  dtype=dtype, L=c.prompts.prompt_tokens + c.prompts.output_tokens // 2,
                                  cov_max=c.runs.cov_max, runs=c.runs.runs)


@dataclass
class Point:
    kernel: str  # spec key, or "draft_step" (K1 -> K2 -> K3 of one draft layer)
    label: str  # K1..K7, or "K1-K3"
    params: dict = field(default_factory=dict)  # B, W, K, H, Q, T, V, L, S, dtype, variant

    @property
    def pid(self) -> str:
        p = self.params
        parts = [self.kernel, p.get("variant", "")]
        for k in ("B", "Q", "V", "dtype"):
            if k in p:
                parts.append(f"{k}{p[k]}")
        return "/".join(x for x in parts if x)

    @property
    def per_cycle(self) -> bool:
        """True for the kernels run once per draft layer (D per cycle), False for once per verify."""
        return self.kernel in ("draft_tree_score", "update_draft_state", "work_deltas", "draft_step") or \
            self.params.get("variant") == "draft"


def operating_points(shape: BenchShape, which: str = "all") -> list[Point]:
    s = shape
    pts: list[Point] = []
    for B in s.batches:
        common = dict(B=B, W=s.W, K=s.K)
        pts.append(Point("draft_tree_score", "K1", dict(common, H=s.H, dtype=s.dtype)))
        pts.append(Point("update_draft_state", "K2", dict(common, N=s.N, M=s.M, I=s.I, Vn=s.Vn)))
        pts.append(Point("work_deltas", "K3", dict(B=B, K=s.K, Vn=s.Vn)))
        pts.append(Point("draft_step", "K1-K3", dict(common, H=s.H, N=s.N, M=s.M, I=s.I, Vn=s.Vn, dtype=s.dtype)))
        T_draft = max(1 + (s.D - 1) * s.W, s.W)
        pts.append(Point("tree_mask", "K4", dict(B=B, Q=s.W, T=T_draft, L=s.L, variant="draft")))
        pts.append(Point("logits_to_probas", "K5", dict(B=B, Q=s.W, V=s.V_hot, variant="draft")))
        pts.append(Point("tree_mask", "K4", dict(B=B, Q=s.Vn, T=s.Vn, L=s.L, variant="verify")))
        pts.append(Point("logits_to_probas", "K5", dict(B=B, Q=s.Vn, V=s.V, variant="verify")))
        pts.append(Point("reject_sample", "K6", dict(B=B, Q=s.Vn, V=s.V, S=s.S)))
        pts.append(Point("update_verify", "K7", dict(B=B, Q=s.Vn, S=s.S, H=s.H, L=s.L, dtype=s.dtype)))
    if which in ("B1", "smoke"):
        pts = [p for p in pts if p.params["B"] == min(s.batches)]
    if which == "smoke":  # every kernel once at the smallest batch (K4, K5: their draft-side point)
        pts = [p for p in pts if p.kernel != "draft_step" and p.params.get("variant") != "verify"]
    elif which not in ("all", "B1"):
        raise ValueError(f"points must be 'all', 'B1' or 'smoke', got {which!r}")
    return pts


def model_bytes(p: Point) -> tuple[int, int]:
    """(bytes in, bytes out) of one call by the byte model (provenance "model")."""
    q = p.params
    B = q["B"]
    eh = 4 if q.get("dtype", "float32") == "float32" else 2
    if p.kernel == "draft_tree_score":
        return bm.k1(B, q["W"], q["K"], q["H"], eh, hot=True)
    if p.kernel == "update_draft_state":
        n = min(q["Vn"], q["M"])
        return bm.k2(B, q["W"], q["K"], q["I"], n, n)
    if p.kernel == "work_deltas":
        return bm.k3(B, q["K"], q["Vn"])
    if p.kernel == "draft_step":
        parts = [model_bytes(Point(k, "", q)) for k in ("draft_tree_score", "update_draft_state", "work_deltas")]
        return sum(a for a, _ in parts), sum(b for _, b in parts)
    if p.kernel == "tree_mask":
        return bm.k4(B, q["T"], q["Q"], q["L"])
    if p.kernel == "logits_to_probas":
        return bm.k5(B * q["Q"], q["V"], B)
    if p.kernel == "reject_sample":
        return bm.k6(B, q["Q"], q["S"], q["V"])
    if p.kernel == "update_verify":
        n = B * (min(ACCEPTED, q["Q"] - 1, q["S"] - 1) + 1)
        return bm.k7(B, q["Q"], q["S"], q["H"], eh, n, B, n)
    raise KeyError(p.kernel)


def roofline_us(p: Point, bps: float) -> float:
    """The call's HBM floor at ``bps``, the peak of the card that ran it (``eagle4.perf.card``)."""
    bi, bo = model_bytes(p)
    return bm.roofline_us(bi + bo, bps)
