"""The fused FPGA draft pipeline's approximations, applied to the local engine's draft model, and the
measurement of their effect on the mean acceptance length (gate ``approximation_acceptance_impact``).

The fused design (``hls/fused/draft_pipeline``, contract ``[fpga.fused]``) differs from the exact draft
in two ways, reproduced here without changing the engine:

1. **Hot vocabulary** (``lm_head_vocab = "hot"``): the draft LM head computes logits only for the
   ``Vh`` hot tokens. The softmax / top-K (K5 + host top-K in the engine, ``stage_candidates`` in
   HLS) then run over ``Vh`` columns, so the draft candidates are *hot indices*; K1 maps them back
   to real token ids through its ``hot_token_id`` table (KERNELS.md §1.5 step 2,
   ``use_hot_token_id = true``) before K2 stores them in the tree. Here:
   :func:`restrict_lm_head` swaps the draft ``lm_head`` for one holding only the hot rows, and
   :class:`HotTokenBackend` wraps the engine's kernel backend so every K1 call gets
   ``hot_token_id`` and ``use_hot_token_id = True`` (the engine's own call passes ``False``).

   The hot set (:func:`select_hot_vocab`) is chosen deterministically from token frequencies of the
   embedded pair's *training corpus* (the files listed, with sha256, in
   ``models/default/training_summary.json``, concatenated exactly like
   ``scripts/train_default_pair.py``): count every byte token, rank by (count descending, token id
   ascending), keep the first ``Vh``, store them sorted by token id (EAGLE-3's ``d2t`` convention).
   The evaluation prompts are *not* used to pick the set. ``Vh`` is the deployment ratio
   ``[fpga.model] hot_vocab_size / vocab_size`` (32768 / 128256) scaled to the embedded model's
   vocabulary and rounded (260 -> 66), see :func:`scaled_hot_vocab_size`.

2. **int8 transport** (``lm_head_dtype = "int8"``, ``drafter_dtype = "int8"``): weights travel as
   int8 with one f32 scale per output row, symmetric (``scale = max|w_row| / 127``,
   ``q = clamp(round_half_even(w / scale), -127, 127)``). :func:`fake_quant_int8_rows` quantizes and
   dequantizes (``q * scale`` in f32); the model then runs its ordinary f32 arithmetic on the
   dequantized weights. (The HLS LM head computes ``(sum q*x) * scale``; it differs from
   ``sum (q*scale)*x`` only by f32 rounding.) "Drafter weights" are the weights the budget model
   counts as drafter weights (``FpgaModel.drafter_params``): ``fc.weight`` and every linear weight
   of the decoder layer(s) (q/k/v/o, gate/up/down). Biases, RMSNorm weights and the token
   embedding stay as they are (the embedding is a bf16 lookup in the design).

:func:`measure` runs the contract's prompts through fresh engines (exact, each approximation alone,
both together), checks that greedy speculative output still equals target-only greedy output
(speculative decoding is lossless: the approximations may only change acceptance), and returns one
row per configuration; :func:`write_csv` writes ``reports/acceptance_impact.csv`` with the columns
``eagle4.gates.metrics.acceptance_length_impact`` reads (``impact``, ``provenance``,
``contract_sha256``).
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from eagle4.backends.base import Backend
from eagle4.report import atomic

ROOT = Path(__file__).resolve().parents[3]
TRAINING_SUMMARY = ROOT / "models" / "default" / "training_summary.json"

CSV_FIELDS = ["config", "lm_head_vocab", "lm_head_dtype", "drafter_dtype", "mean_acceptance_length",
              "baseline_mean_acceptance_length", "impact", "impact_ci95_lo", "impact_ci95_hi", "n_verify_steps",
              "baseline_n_verify_steps", "output_tokens_total", "prompts", "output_tokens", "batch",
              "hot_vocab_size_used", "vocab_size", "hot_vocab_ratio_contract", "hot_source", "hot_table_sha256",
              "hot_corpus_coverage", "target_output_hot_coverage", "k1_hot_calls", "int8_tensors",
              "int8_max_abs_err_over_scale", "greedy_equals_target", "temperatures", "seed", "backend", "device",
              "model_device", "torch", "threads", "wall_s", "commit", "contract_name", "contract_sha256",
              "provenance", "timestamp"]


# ---- hot vocabulary --------------------------------------------------------------------------------
@dataclass(frozen=True)
class HotVocab:
    token_ids: np.ndarray  # [Vh] int64, ascending: hot index -> real token id (K1's hot_token_id)
    source: str            # where the frequencies came from
    coverage: float        # fraction of the counted tokens that fall in the hot set

    @property
    def size(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def sha256(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.token_ids, np.int64).tobytes()).hexdigest()


def scaled_hot_vocab_size(vocab_size: int, hot_vocab_size_full: int, vocab_size_full: int) -> int:
    """The deployment ratio ``hot / full`` applied to ``vocab_size``, rounded to nearest (>= 1)."""
    if not 0 < hot_vocab_size_full <= vocab_size_full:
        raise ValueError(f"hot_vocab_size {hot_vocab_size_full} must be in (0, vocab_size {vocab_size_full}]")
    return int(min(vocab_size, max(1, round(vocab_size * hot_vocab_size_full / vocab_size_full))))


def contract_hot_vocab_size(contract, vocab_size: int) -> tuple[int, float]:
    """(scaled hot size, contract ratio) from ``[fpga.model]`` of ``contract``."""
    from eagle4.contract import fpga_section

    m = fpga_section(contract).model
    return scaled_hot_vocab_size(vocab_size, m.hot_vocab_size, m.vocab_size), m.hot_vocab_size / m.vocab_size


def training_corpus_bytes(summary_path: str | Path = TRAINING_SUMMARY) -> bytes:
    """The embedded pair's training corpus, rebuilt from ``training_summary.json`` (every file's sha256
    checked; joined with ``b"\\n\\n"`` like ``scripts/train_default_pair.py``)."""
    s = json.loads(Path(summary_path).read_text())
    blobs = []
    for f in s["corpus"]:
        p = Path(f["path"])
        if not p.is_file():
            raise FileNotFoundError(f"training corpus file {p} (listed in {summary_path}) is not on this machine")
        b = p.read_bytes()
        got = hashlib.sha256(b).hexdigest()
        if got != f["sha256"]:
            raise ValueError(f"training corpus file {p} has sha256 {got}, {summary_path} records {f['sha256']}")
        blobs.append(b)
    return b"\n\n".join(blobs)


def token_frequencies(token_ids, vocab_size: int) -> np.ndarray:
    ids = np.asarray(token_ids, np.int64).ravel()
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token ids outside [0, {vocab_size})")
    return np.bincount(ids, minlength=vocab_size).astype(np.int64)


def select_hot_vocab(counts: np.ndarray, size: int, source: str = "") -> HotVocab:
    """The ``size`` most frequent tokens (count descending, token id ascending on ties), returned
    sorted by token id."""
    counts = np.asarray(counts, np.int64)
    if not 1 <= size <= counts.shape[0]:
        raise ValueError(f"hot vocabulary size {size} must be in [1, {counts.shape[0]}]")
    order = np.lexsort((np.arange(counts.shape[0]), -counts))  # primary: -count, secondary: id
    hot = np.sort(order[:size]).astype(np.int64)
    tot = counts.sum()
    return HotVocab(hot, source, float(counts[hot].sum() / tot) if tot else float("nan"))


def default_hot_vocab(contract, tokenizer, vocab_size: int, *, source: str = "training_corpus") -> HotVocab:
    """The hot set of the measurement: contract-scaled size, frequencies of the training corpus
    (``source="training_corpus"``) or of the contract's prompts (``source="prompts"``)."""
    size, _ = contract_hot_vocab_size(contract, vocab_size)
    if source == "training_corpus":
        ids = list(training_corpus_bytes())  # byte-level model: token id == byte value
        label = "training_corpus:" + str(TRAINING_SUMMARY.relative_to(ROOT))
    elif source == "prompts":
        ids = [t for p in contract.load_prompts() for t in tokenizer.encode(p["text"])]
        label = "prompts"
    else:
        raise ValueError(f"unknown hot-vocabulary source {source!r} (training_corpus | prompts)")
    return select_hot_vocab(token_frequencies(ids, vocab_size), size, label)


def restrict_lm_head(draft: nn.Module, hot_token_id) -> None:
    """Replace ``draft.lm_head`` by a linear map onto the hot rows only (logits ``[n, Vh]``, column
    ``i`` = token ``hot_token_id[i]``)."""
    hot = torch.as_tensor(np.asarray(hot_token_id, np.int64))
    W = draft.lm_head.weight.detach()
    head = nn.Linear(W.shape[1], hot.numel(), bias=False).to(device=W.device, dtype=W.dtype)
    with torch.no_grad():
        head.weight.copy_(W[hot.to(W.device)])
    draft.lm_head = head


class HotTokenBackend(Backend):
    """Wraps a kernel backend: every K1 (``draft_tree_score``) call gets the hot table and
    ``use_hot_token_id = True``; everything else passes through. ``k1_calls`` counts the K1 calls
    made on the hot path, ``last_k1`` keeps the last call's token tensors (before / after remap)."""

    def __init__(self, inner: Backend, hot_token_id):
        self.inner = inner
        self.hot = np.ascontiguousarray(np.asarray(hot_token_id, np.int64))
        self.name = inner.name
        self.provenance = inner.provenance
        self.k1_calls = 0
        self.last_k1: dict = {}

    def available(self):
        return self.inner.available()

    def supports(self, kernel):
        return self.inner.supports(kernel)

    def device_info(self):
        return self.inner.device_info()

    def run(self, kernel, inputs, params):
        if kernel == "draft_tree_score":
            inputs = {**inputs, "hot_token_id": self.hot}
            params = {**params, "use_hot_token_id": True}
            out = self.inner.run(kernel, inputs, params)
            self.k1_calls += 1
            self.last_k1 = {"tokens_in": np.array(inputs["topk_tokens_sampling"]),
                            "tokens_out": np.array(out["topk_tokens_sampling"])}
            return out
        return self.inner.run(kernel, inputs, params)


# ---- int8 transport --------------------------------------------------------------------------------
def quantize_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-row int8: ``(q [R, C] int8, scale [R] f32)`` with ``w ~= q * scale``.
    An all-zero row gets scale 1 and q = 0."""
    w32 = w.detach().to(torch.float32)
    amax = w32.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax)).to(torch.float32)
    q = torch.clamp(torch.round(w32 / scale[:, None]), -127, 127).to(torch.int8)
    return q, scale


def dequantize_int8_rows(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.to(torch.float32) * scale.to(torch.float32)[:, None]


def fake_quant_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dequantized weight in f32, per-row scale)."""
    q, s = quantize_int8_rows(w)
    return dequantize_int8_rows(q, s), s


def _fake_quant_(lin: nn.Linear, stats: list) -> None:
    with torch.no_grad():
        w = lin.weight
        deq, s = fake_quant_int8_rows(w)
        err = float(((deq - w.to(torch.float32)).abs() / s[:, None]).max())
        w.copy_(deq.to(w.dtype))
    stats.append(err)


def drafter_linears(draft: nn.Module) -> list[tuple[str, nn.Linear]]:
    """The drafter weights of the int8 transport: ``fc`` and every linear of the decoder layers."""
    out = [("fc", draft.fc)]
    out += [(f"layers.{n}", m) for n, m in draft.layers.named_modules() if isinstance(m, nn.Linear)]
    return out


def quantize_lm_head_(draft: nn.Module) -> list[float]:
    stats: list[float] = []
    _fake_quant_(draft.lm_head, stats)
    return stats


def quantize_drafter_(draft: nn.Module) -> list[float]:
    stats: list[float] = []
    for _, lin in drafter_linears(draft):
        _fake_quant_(lin, stats)
    return stats


# ---- configurations --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ApproxConfig:
    name: str
    hot_vocab: bool = False
    int8_lm_head: bool = False
    int8_drafter: bool = False

    @property
    def lm_head_vocab(self) -> str:
        return "hot" if self.hot_vocab else "full"

    @property
    def lm_head_dtype(self) -> str:
        return "int8" if self.int8_lm_head else "float32"

    @property
    def drafter_dtype(self) -> str:
        return "int8" if self.int8_drafter else "float32"


EXACT = ApproxConfig("exact")
CONFIGS = [EXACT,
           ApproxConfig("hot_vocab", hot_vocab=True),
           ApproxConfig("int8_transport", int8_lm_head=True, int8_drafter=True),
           ApproxConfig("hot_vocab+int8_transport", hot_vocab=True, int8_lm_head=True, int8_drafter=True)]
SPLIT_CONFIGS = [ApproxConfig("int8_lm_head", int8_lm_head=True), ApproxConfig("int8_drafter", int8_drafter=True)]


def fused_config(contract) -> ApproxConfig:
    """The approximations ``[fpga.fused]`` of the contract declares, as one configuration."""
    from eagle4.contract import fpga_section

    f = fpga_section(contract).fused
    return ApproxConfig("fused", hot_vocab=f.lm_head_vocab == "hot", int8_lm_head=f.lm_head_dtype == "int8",
                        int8_drafter=f.drafter_dtype == "int8")


@dataclass
class Applied:
    config: ApproxConfig
    hot: HotVocab | None = None
    backend: HotTokenBackend | None = None
    int8_errs: list = field(default_factory=list)


def apply_approximations(engine, config: ApproxConfig, hot: HotVocab | None = None) -> Applied:
    """Turn ``engine``'s draft model into ``config``'s approximated form, in place (use a fresh engine
    per configuration). The target model and the engine code are untouched."""
    a = Applied(config)
    if config.hot_vocab:
        if hot is None:
            raise ValueError(f"{config.name}: the hot-vocabulary approximation needs a hot table")
        restrict_lm_head(engine.draft, hot.token_ids)
        engine.backend = a.backend = HotTokenBackend(engine.backend, hot.token_ids)
        a.hot = hot
    if config.int8_lm_head:
        a.int8_errs += quantize_lm_head_(engine.draft)
    if config.int8_drafter:
        a.int8_errs += quantize_drafter_(engine.draft)
    return a


# ---- measurement -----------------------------------------------------------------------------------
class LosslessnessError(AssertionError):
    """Greedy speculative output differs from target-only greedy output."""


def _boot_impact(base_req, appr_req, n=2000, seed=0) -> tuple[float, float]:
    """95% bootstrap interval of the impact, resampling prompts (paired: same prompts both sides)."""
    P = len(base_req)
    if P < 2:
        return float("nan"), float("nan")
    bs = np.asarray([sum(x) for x in base_req], float)
    bc = np.asarray([len(x) for x in base_req], float)
    as_ = np.asarray([sum(x) for x in appr_req], float)
    ac = np.asarray([len(x) for x in appr_req], float)
    idx = np.random.default_rng(seed).integers(0, P, size=(n, P))
    mb = bs[idx].sum(1) / bc[idx].sum(1)
    ma = as_[idx].sum(1) / ac[idx].sum(1)
    imp = (mb - ma) / mb
    return float(np.percentile(imp, 2.5)), float(np.percentile(imp, 97.5))


def measure(contract, *, configs: list[ApproxConfig] | None = None, n_prompts: int | None = None,
            output_tokens: int | None = None, hot_source: str = "training_corpus", backend: str = "ref",
            device: str = "cpu", check_lossless: bool = True, commit: str | None = None, log=print) -> list[dict]:
    """Mean acceptance length of each configuration on the contract's prompts (one static batch of
    ``n_prompts``, default all; ``output_tokens`` default the contract's), and its impact relative to
    the exact draft. Raises :class:`LosslessnessError` when a greedy run's output differs from the
    target-only greedy output."""
    import time

    from eagle4.workload.engine import LocalEngine
    from eagle4.workload.runner import git_commit

    configs = list(configs or CONFIGS)
    if configs[0] != EXACT:
        configs = [EXACT] + [c for c in configs if c != EXACT]
    prompts = contract.load_prompts()
    if n_prompts:
        prompts = prompts[:n_prompts]
    n_out = int(output_tokens or contract.prompts.output_tokens)
    temps = list(contract.decode.temperatures)
    greedy = all(t < 1e-6 for t in temps)
    seed = contract.runs.seeds[0]
    commit = commit or git_commit()
    _, ratio = contract_hot_vocab_size(contract, 1 << 30)

    def fresh():
        return LocalEngine.from_contract(contract, backend, device=device,
                                         backend_options={"device": device} if backend == "ref" else None)

    eng0 = fresh()
    ids = eng0.encode_prompts([p["text"] for p in prompts], contract.prompts.prompt_tokens)
    V = eng0.draft.config.vocab_size
    hot = default_hot_vocab(contract, eng0.tokenizer, V, source=hot_source)
    target_out = eng0.generate_target_only(ids, n_out) if greedy and check_lossless else None
    tgt_tokens = [t for o in (target_out or []) for t in o]
    tgt_cov = float(np.isin(tgt_tokens, hot.token_ids).mean()) if tgt_tokens else float("nan")
    dev_info = eng0.backend.device_info()
    model_device = (torch.cuda.get_device_name(eng0.device) if eng0.device.type == "cuda"
                    else platform.processor() or platform.machine() or "cpu")
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    results = []
    for cfg in configs:
        eng = eng0 if cfg == EXACT else fresh()
        app = apply_approximations(eng, cfg, hot)
        t0 = time.perf_counter()
        res = eng.generate(ids, n_out, temps, seed=seed)
        wall = time.perf_counter() - t0
        same = "n/a"
        if target_out is not None:
            for i, (r, b) in enumerate(zip(res, target_out, strict=True)):
                if r.output_ids != b:
                    j = next((k for k, (x, y) in enumerate(zip(r.output_ids, b, strict=False)) if x != y),
                             min(len(r.output_ids), len(b)))
                    raise LosslessnessError(f"{cfg.name}: prompt {i}: greedy speculative output differs from the "
                                            f"target-only greedy output at token {j}")
            same = "true"
        if cfg.hot_vocab and app.backend.k1_calls == 0:
            raise RuntimeError(f"{cfg.name}: K1 never ran on the hot path")
        acc = [a for r in res for a in r.accept_lengths]
        results.append({"cfg": cfg, "app": app, "per_req": [list(r.accept_lengths) for r in res],
                        "mean": float(np.mean(acc)), "steps": len(acc),
                        "tokens": sum(len(r.output_ids) for r in res), "same": same, "wall": wall})
        log(f"{cfg.name:26s} mean acceptance {results[-1]['mean']:.4f} over {len(acc)} request-steps "
            f"({wall:.1f}s)")

    base = results[0]
    rows = []
    for r in results:
        cfg, app = r["cfg"], r["app"]
        impact = (base["mean"] - r["mean"]) / base["mean"]
        lo, hi = (0.0, 0.0) if cfg == EXACT else _boot_impact(base["per_req"], r["per_req"])
        rows.append({
            "config": cfg.name, "lm_head_vocab": cfg.lm_head_vocab, "lm_head_dtype": cfg.lm_head_dtype,
            "drafter_dtype": cfg.drafter_dtype, "mean_acceptance_length": r["mean"],
            "baseline_mean_acceptance_length": base["mean"], "impact": impact, "impact_ci95_lo": lo,
            "impact_ci95_hi": hi, "n_verify_steps": r["steps"], "baseline_n_verify_steps": base["steps"],
            "output_tokens_total": r["tokens"], "prompts": len(ids), "output_tokens": n_out, "batch": len(ids),
            "hot_vocab_size_used": hot.size if cfg.hot_vocab else V, "vocab_size": V,
            "hot_vocab_ratio_contract": ratio, "hot_source": hot.source if cfg.hot_vocab else "",
            "hot_table_sha256": hot.sha256 if cfg.hot_vocab else "",
            "hot_corpus_coverage": hot.coverage if cfg.hot_vocab else "",
            "target_output_hot_coverage": tgt_cov if cfg.hot_vocab else "",
            "k1_hot_calls": app.backend.k1_calls if app.backend else 0, "int8_tensors": len(app.int8_errs),
            "int8_max_abs_err_over_scale": max(app.int8_errs) if app.int8_errs else "",
            "greedy_equals_target": r["same"], "temperatures": ";".join(f"{t:g}" for t in temps), "seed": seed,
            "backend": eng0.backend.name, "device": dev_info.device, "model_device": model_device,
            "torch": torch.__version__, "threads": torch.get_num_threads(), "wall_s": r["wall"], "commit": commit,
            "contract_name": contract.contract.name, "contract_sha256": contract.sha256, "provenance": "measured",
            "timestamp": now})
    return rows


def write_csv(rows: list[dict], path: str | Path) -> Path:
    if not rows:
        raise RuntimeError(f"refusing to write an empty results file {path}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(p, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in r.items()})
    return p


__all__ = ["CONFIGS", "CSV_FIELDS", "EXACT", "SPLIT_CONFIGS", "ApproxConfig", "Applied", "HotTokenBackend",
           "HotVocab", "LosslessnessError", "apply_approximations", "contract_hot_vocab_size", "default_hot_vocab",
           "dequantize_int8_rows", "drafter_linears", "fake_quant_int8_rows", "fused_config", "measure",
           "quantize_drafter_", "quantize_int8_rows", "quantize_lm_head_", "restrict_lm_head",
           "scaled_hot_vocab_size", "select_hot_vocab", "token_frequencies", "training_corpus_bytes", "write_csv"]
