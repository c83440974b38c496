"""bytes/token of the unfused FPGA backend and of the fused one on the same workload trace.

* P0 kernel traffic (and the draft LM head, which the fused design contains): counted by the C-sim
  port counters of ``hls/fused`` (fused designs and the unfused reference chain), on trace-shaped
  inputs at small-but-representative sizes (``[fpga.csim]``): the real batch sizes, widths, K,
  Q, S, N, M, I and prefix length, but a small hidden size H and vocabulary V. Every port's byte
  count is affine in H and V (bilinear H*V for the LM-head weight port): the §10 formulas are
  polynomials of degree <= 1 in each of H and V. We fit that form per port from 4 C-sim points
  and check it on a 5th point with every size different, which must match exactly (integer
  bytes), then evaluate at the model's H and V. Provenance ``csim``.
* Drafter layers (weights, embeddings, KV cache, hidden in/out): computed from ``[fpga.model]``
  (provenance ``computed``). The target model's forward is outside both backends (excluded).

* Host <-> FPGA transfers (``host_fpga_transfers``, computed): the target model's forward runs on the
  host (it is outside both backends), so every verify step DMAs its logits and hidden states to the
  FPGA and the draft tree (tokens, positions, mask, KV indices) and the accepted tokens back; the
  same on every variant.

Every byte is counted in 64-B DRAM beats: each port's (or tensor's) traffic of one step rounded up to
whole beats. This is a lower bound on beats (it assumes each port's traffic of a step is one
contiguous burst; scattered accesses cost more).

Like for like, on the same trace and per operating point (batch), four variants are counted:
``unfused`` ([fpga.unfused]: the initial unfused backend), ``unfused_approx`` (the unfused chain with
the approximations of [fpga.fused]: hot vocabulary, int8 LM head and drafter), ``fused_exact`` (the
fused designs at the precision and vocabulary of [fpga.unfused]) and ``fused`` ([fpga.fused]). The
three ratios: fusion only = unfused / fused_exact, approximations only = unfused / unfused_approx,
effective = unfused / fused (the work order's ratio).

tokens per cycle = sum over requests of (accept length + 1).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eagle4.backends import fused_csim as fc
from eagle4.budget.config import DTYPE_BYTES, FpgaSection, fpga_section
from eagle4.budget.trace import Trace, build_trace
from eagle4.report import atomic

BYTES_COLUMNS = ("contract_sha256", "backend", "component", "batch", "cycles", "bytes_per_cycle", "bytes_total",
                 "tokens_total", "bytes_per_token", "provenance", "method", "accept_source", "accept_sha256")
HW_COLUMNS = ("contract_sha256", "backend", "chain", "batch", "cycle", "kernel", "port", "bytes_read",
              "bytes_written", "csim_bytes_read", "csim_bytes_written", "csim_H", "csim_V", "provenance", "scaling")


class ScalingError(RuntimeError):
    """A port's C-sim byte count is not affine in (H, V) as the scaling assumes."""


BEAT = 64  # bytes of one DRAM (HBM) beat: a 512-bit m_axi word

# variant -> (chain, the [fpga.*] declaration giving precision and vocabulary, the one giving the chain's flags)
VARIANTS = {
    "unfused": ("unfused", "unfused", "unfused"),
    "unfused_approx": ("unfused", "fused", "unfused"),
    "fused_exact": ("fused", "unfused", "fused"),
    "fused": ("fused", "fused", "fused"),
}
RATIOS = {  # name -> (numerator variant, denominator variant)
    "fusion_only": ("unfused", "fused_exact"),
    "approximations_only": ("unfused", "unfused_approx"),
    "effective": ("unfused", "fused"),
}
PRECISION_FIELDS = ("lm_head_vocab", "lm_head_dtype", "drafter_dtype")


def beats(nbytes: float) -> int:
    """Bytes rounded up to whole 64-B beats (0 stays 0)."""
    return int(math.ceil(nbytes / BEAT)) * BEAT if nbytes > 0 else 0


def variant_decl(f: FpgaSection, variant: str):
    """The declaration a variant runs with: chain flags of one [fpga.*] table, precision of another."""
    _, prec, flags = VARIANTS[variant]
    p = getattr(f, prec)
    return getattr(f, flags).model_copy(update={k: getattr(p, k) for k in PRECISION_FIELDS})


def host_transfer_bytes(f: FpgaSection, dec: dict, B: int, L: int) -> dict[str, int]:
    """Host <-> FPGA bytes of one verify step (target model on the host), each tensor in whole beats."""
    m = f.model
    Q, S = dec["Q"], dec["S"]
    Eh = DTYPE_BYTES[m.hidden_dtype]
    to_fpga = [B * Q * m.vocab_size * 4, B * Q * m.hidden_size * Eh, B * 4, B * Q * 4, B * 4]  # logits, hidden,
    # temperatures, coins, final coins
    to_host = [B * Q * 8, B * Q * 8, B * ((Q * (L + Q) + 7) // 8), B * (L + Q) * 4, 3 * (B + 1) * 4,  # tree tokens,
               B * S * 4, B * 4, B * Q * 9]  # positions, mask, KV indices, indptrs; accepted tokens, lengths, evictions
    return {"host_to_fpga": sum(beats(x) for x in to_fpga), "fpga_to_host": sum(beats(x) for x in to_host)}


# ---------------------------------------------------------------------------------------------
# affine scaling of counted bytes


def _fit(run, h0: int, v0: int, bilinear: bool, check: tuple[int, int] | None = None):
    """run(h, v) -> {port: (r, w)}. Returns ({port: (coef_r, coef_w)}, base counts). ``check``: the
    exact-check point (default: (3*h0 + 2, 3*v0 + 4), every size different)."""
    pts = [(h0, v0), (2 * h0, v0), (h0, 2 * v0)] + ([(2 * h0, 2 * v0)] if bilinear else [])
    res = [run(h, v) for h, v in pts]
    X = np.array([[1, h, v] + ([h * v] if bilinear else []) for h, v in pts], float)
    ports = sorted(set().union(*[r.keys() for r in res]))
    coefs = {}
    for p in ports:
        Y = np.array([[r.get(p, (0, 0))[0], r.get(p, (0, 0))[1]] for r in res], float)
        coefs[p] = np.linalg.solve(X, Y)
    # every size different; H even (a packed int4 row is ceil(H / 2) bytes) and V a multiple of the fused LM
    # head's 4 weight ports (each holds every 4th row): each port's bytes are affine there
    hc, vc = check or (3 * h0 + 2, 3 * v0 + 4)
    chk = run(hc, vc)
    xc = np.array([1, hc, vc] + ([hc * vc] if bilinear else []), float)
    for p in ports:
        pred = xc @ coefs[p]
        got = np.array(chk.get(p, (0, 0)), float)
        if np.any(np.abs(pred - got) > 0.5):
            raise ScalingError(f"port {p}: bytes at H={hc}, V={vc} are {got.tolist()}, the affine fit predicts "
                               f"{pred.tolist()}; the counted bytes are not linear in H/V")
    return coefs, res[0]


def _eval(coefs, H: int, V: int):
    out = {}
    for p, c in coefs.items():
        x = np.array([1, H, V] + ([H * V] if c.shape[0] == 4 else []), float)
        r, w = x @ c
        out[p] = (int(round(r)), int(round(w)))
    return out


# ---------------------------------------------------------------------------------------------
# computed drafter traffic


def drafter_bytes(f: FpgaSection, decl, B: int, W: int, L: int, T_prev: int) -> dict[str, int]:
    """Computed HBM bytes of one drafter layer call on B*W frontier rows."""
    m = f.model
    Eh = DTYPE_BYTES[m.hidden_dtype]
    Ekv = DTYPE_BYTES[m.kv_dtype]
    Ew = DTYPE_BYTES[decl.drafter_dtype]
    R = B * W
    kvw = 2 * m.drafter_kv_heads * m.drafter_head_dim * Ekv * m.drafter_layers
    return {
        "drafter_weights": int(math.ceil(m.drafter_params * Ew)),
        "drafter_embed_hidden_io": int(R * m.hidden_size * Eh * 3),  # token embeddings + hidden in + hidden out
        "drafter_kv": int(B * (L + T_prev) * kvw + R * kvw),  # prefix+tree KV read once per request, new KV write
    }


# ---------------------------------------------------------------------------------------------


@dataclass
class BackendCount:
    backend: str
    # component -> total bytes over the trace, provenance
    comp: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    prov: dict[str, str] = field(default_factory=dict)
    by_batch: dict[tuple[int, str], float] = field(default_factory=lambda: defaultdict(float))
    tokens: int = 0
    tokens_by_batch: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    cycles_by_batch: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def total(self) -> float:
        return float(sum(self.comp.values()))

    @property
    def bytes_per_token(self) -> float:
        return self.total / max(self.tokens, 1)


@dataclass
class BytesResult:
    trace: Trace
    fpga: FpgaSection
    unfused: BackendCount
    fused: BackendCount
    hw_rows: list[dict]
    per_call: dict  # (backend, batch, stage) -> {"B_in":..., "B_out":..., "calls": n}
    notes: list[str]
    variants: dict[str, BackendCount] = field(default_factory=dict)  # every VARIANTS entry
    onchip: tuple | None = None  # (per-design storage, the fused pair), set by run_budget

    @property
    def ratio(self) -> float:
        return self.unfused.bytes_per_token / max(self.fused.bytes_per_token, 1e-30)

    @property
    def batches(self) -> list[int]:
        return sorted(self.unfused.cycles_by_batch)

    def bytes_per_token_at(self, variant: str, B: int | None = None) -> float:
        bc = self.variants[variant]
        if B is None:
            return bc.bytes_per_token
        nb = sum(v for (b, _), v in bc.by_batch.items() if b == B)
        return nb / max(bc.tokens_by_batch[B], 1)

    def ratio_of(self, name: str, B: int | None = None) -> float:
        """A RATIOS entry at operating point B (None: pooled over the trace)."""
        num, den = RATIOS[name]
        return self.bytes_per_token_at(num, B) / max(self.bytes_per_token_at(den, B), 1e-30)

    def production_batch(self) -> int:
        """The production point: the contract declares none, so the largest operating batch (throughput)."""
        return max(self.batches)

    def top_contributors_at(self, variant: str, B: int, n: int = 3) -> list[tuple[str, float, float]]:
        """(component, bytes/token of ``variant`` at B, of the unfused baseline at B), largest first."""
        bc, u = self.variants[variant], self.variants["unfused"]
        comps = sorted({c for (b, c) in bc.by_batch if b == B}, key=lambda c: -bc.by_batch[(B, c)])[:n]
        return [(c, bc.by_batch[(B, c)] / max(bc.tokens_by_batch[B], 1),
                 u.by_batch.get((B, c), 0.0) / max(u.tokens_by_batch[B], 1)) for c in comps]

    def early_gate_lines(self, threshold: float = 2.0) -> list[str]:
        """The early gate (WP4: fusion and dataflow) on the fusion-only ratio at the production point,
        stated plainly, with the top contributors when it fails."""
        B = self.production_batch()
        r = self.ratio_of("fusion_only", B)
        ok = r >= threshold
        out = [f"early gate (fusion only, production point B={B}: the largest operating batch, the contract "
               f"declares none): {r:.3f}x {'>=' if ok else '<'} {threshold:g}x -> {'PASS' if ok else 'FAILS'}"]
        if not ok:
            out.append("  the work order's escalation rule applies: fusion alone does not reach the early target")
            for c, fb, ub in self.top_contributors_at("fused_exact", B):
                out.append(f"  top contributor {c}: {fb / 2**20:.3f} MiB/token fused (unfused {ub / 2**20:.3f})")
        return out

    def ratio_p0(self) -> float:
        def p0(bc):
            return sum(v for k, v in bc.comp.items() if bc.prov.get(k) == "csim")
        return p0(self.unfused) / max(p0(self.fused), 1e-30)

    def summary_lines(self) -> list[str]:
        u, f = self.unfused, self.fused
        out = [f"bytes/token: unfused {u.bytes_per_token / 2**20:.3f} MiB, fused {f.bytes_per_token / 2**20:.3f} MiB, "
               f"ratio {self.ratio:.3f}x (counted parts only {self.ratio_p0():.3f}x); accept length "
               f"{self.trace.accept_provenance} (mean {self.trace.mean_accept + 1:.3f} tokens per verify step, bonus "
               f"included), prefix L={self.trace.prefix_len}"]
        for comp, fb, ub in self.top_contributors(2):
            out.append(f"fused top contributor {comp}: {fb / 2**20:.3f} MiB/token (unfused {ub / 2**20:.3f}) "
                       f"[{f.prov.get(comp)}]")
        return out

    def top_contributors(self, n: int = 2) -> list[tuple[str, float, float]]:
        """Components of the fused backend with the largest bytes/token: (component, fused B/tok, unfused B/tok)."""
        f = self.fused
        items = sorted(f.comp.items(), key=lambda kv: -kv[1])[:n]
        return [(k, v / max(f.tokens, 1), self.unfused.comp.get(k, 0.0) / max(self.unfused.tokens, 1))
                for k, v in items]


def _component(chain: str, port: str, step: str) -> str:
    """Group ports into components shared by both backends (so the two CSVs line up)."""
    if chain == "unfused":
        k = fc.kernel_of_port("unfused", port)
        if k == "glue":
            return f"{step}_host_glue"
        if k in ("draft_lm_head", "draft_topk"):
            return ("draft_lm_head_weights" if port in ("lmhead_weight", "lmhead_scale")
                    else "draft_lm_head_logits_topk")  # weights and their per-row scales, as the fused side
        if k == "logits_to_probas" and step == "draft":
            return "draft_lm_head_logits_topk"
        if k == "tree_mask":
            return f"{step}_tree_mask"
        return f"{step}_{k}" if k in ("logits_to_probas", "reject_sample", "update_verify") else f"draft_{k}"
    # fused: attribute each port to the stage that owns it
    if step == "draft":
        if port in fc.LM_WEIGHT_PORTS or port == "lm_scale":
            return "draft_lm_head_weights"
        if port in ("draft_hidden", "lm_spill"):
            return "draft_lm_head_logits_topk"
        if port in ("qo_indptr", "kv_indptr", "kv_indices", "positions", "mask_indptr_bits", "mask_indptr_bytes",
                    "packed_mask", "seq_lens", "req_pool_indices", "req_to_token", "draft_cache_locs"):
            return "draft_tree_mask"
        if port in ("out_hidden", "hot_token_id"):
            return "draft_draft_tree_score"
        if port == "work_deltas":
            return "draft_work_deltas"
        if port.startswith("vt_") or port == "cc_out":
            return "draft_host_glue"  # verify-set selection (host glue in the unfused chain)
        return "draft_update_draft_state"  # state write-back, frontier tokens, schedule
    if port in ("qo_indptr", "kv_indptr", "kv_indices", "positions", "mask_indptr_bits", "mask_indptr_bytes",
                "packed_mask", "tree_parent"):
        return "verify_tree_mask"
    if port in ("logits", "temperatures"):
        return "verify_logits_to_probas"
    if port in ("candidates", "retrive_index", "retrive_next_token", "retrive_next_sibling", "coins", "final_coins"):
        return "verify_reject_sample"
    if port == "remaining":
        return "verify_host_glue"
    return "verify_update_verify"


def count_trace(contract, *, root=None, progress=None) -> BytesResult:
    """Run the C-sim counts of every variant on the contract's trace and add the computed parts."""
    f = fpga_section(contract)
    trace = build_trace(contract, root=root)
    dec = trace.decode
    m = f.model
    cs = f.csim
    K, widths, N, M, I, S, Q, L = dec["K"], dec["widths"], dec["N"], dec["M"], dec["I"], dec["S"], dec["Q"], trace.prefix_len
    res = {v: BackendCount(v) for v in VARIANTS}
    hw_rows: list[dict] = []
    per_call: dict = {}
    notes = list(trace.notes)
    scale_note = ("affine in H and V per port (bilinear H*V for the LM-head weight port), fitted on 4 C-sim points "
                  "and checked exactly on a 5th")

    def add(backend, comp, nbytes, prov, B):
        bc = res[backend]
        bc.comp[comp] += nbytes
        bc.prov[comp] = prov
        bc.by_batch[(B, comp)] += nbytes

    def record(backend, chain, step, B, cycle, full, base, csim_v, keep_rows):
        """One step's scaled port counts: beats into the totals; per-call figures and hw_counters.csv rows
        for the two backends of the gates."""
        for port, (r, w) in full.items():
            if not (r or w):
                continue
            comp = _component(chain, port, step)
            add(backend, comp, beats(r) + beats(w), "csim", B)
            if keep_rows:
                pc = per_call.setdefault((backend, B, comp), {"B_in": 0, "B_out": 0})
                pc["B_in"] += beats(r)
                pc["B_out"] += beats(w)
                hw_rows.append({"backend": backend, "chain": f"{step}_step", "batch": B, "cycle": cycle,
                                "kernel": comp, "port": port, "bytes_read": r, "bytes_written": w,
                                "csim_bytes_read": base.get(port, (0, 0))[0],
                                "csim_bytes_written": base.get(port, (0, 0))[1], "csim_H": cs.hidden,
                                "csim_V": csim_v, "provenance": "csim", "scaling": scale_note})

    draft_cache: dict = {}
    verify_cache: dict = {}
    for cyc in trace.cycles:
        B = cyc.batch
        if progress:
            progress(f"cycle {cyc.index}: batch {B}")
        for backend, (chain, _, _) in VARIANTS.items():
            decl = variant_decl(f, backend)
            keep_rows = backend in ("unfused", "fused")  # hw_counters.csv: the two backends of the gates
            # ---------------- draft step (depends only on B and the declaration): counted once ------
            use_hot = decl.lm_head_vocab == "hot"
            key = (chain, B, use_hot, decl.lm_head_dtype, decl.k5_passes, decl.k4_materialize_bool)
            if key not in draft_cache:
                Vt_full = m.hot_vocab_size if use_hot else m.vocab_size
                v0 = cs.hot_vocab if use_hot else cs.vocab

                def run_d(h, v, B=B, decl=decl, use_hot=use_hot, chain=chain):
                    s = fc.DraftShape(B=B, K=K, widths=widths, H=h, Vt=v, V=max(v + 1, cs.vocab) if use_hot else 0,
                                      N=N, M=M, I=I, L=L, verify_num=dec["Vn"], use_hot=use_hot,
                                      hidden_dtype=m.hidden_dtype, weight_dtype=decl.lm_head_dtype, seed=B)
                    _, cnt = fc.run_draft(chain, s, fc.make_draft_inputs(s), k5_passes=decl.k5_passes,
                                          k4_materialize=decl.k4_materialize_bool)
                    return cnt

                coefs, base = _fit(run_d, cs.hidden, v0, bilinear=True)
                draft_cache[key] = (_eval(coefs, m.hidden_size, Vt_full), base, v0)
            full, base, v0 = draft_cache[key]
            record(backend, chain, "draft", B, cyc.index, full, base, v0, keep_rows)
            # drafter layers (computed): one call per draft layer after the root expansion's LM head
            T_prev = 0
            for d, W in enumerate(widths):
                for comp, nb in drafter_bytes(f, decl, B, W, L, T_prev).items():
                    add(backend, comp, beats(nb), "computed", B)
                T_prev += W if d > 0 else 0
            # ---------------- verify step ------------------------------------------------------
            temps = cyc.temperatures
            vkey = (chain, cyc.index, decl.k5_passes, decl.k4_materialize_bool, decl.k6_sglang_style)
            if vkey not in verify_cache:

                def run_v(h, v, B=B, cyc=cyc, decl=decl, chain=chain, temps=temps):
                    s = fc.VerifyShape(B=B, Q=Q, S=S, V=v, H=h, L=L, hidden_dtype=m.hidden_dtype, temperatures=temps,
                                       threshold_single=dec["threshold_single"], threshold_acc=dec["threshold_acc"],
                                       seed=1000 + cyc.index)
                    rng = np.random.default_rng(cyc.index)
                    par = np.stack([_trace_tree(rng, Q, S) for _ in range(B)])
                    a = fc.make_verify_inputs(s, parents=par, accept=cyc.accept)
                    out, cnt = fc.run_verify(chain, s, a, k5_passes=decl.k5_passes,
                                             k4_materialize=decl.k4_materialize_bool, k6_sglang=decl.k6_sglang_style)
                    got = out["accept_length"].tolist()
                    if got != cyc.accept:
                        raise RuntimeError(f"cycle {cyc.index}: the provoked accept lengths {got} differ from the "
                                           f"trace's {cyc.accept}")
                    return cnt

                coefs, base = _fit(run_v, cs.hidden, cs.vocab, bilinear=False)
                verify_cache[vkey] = (_eval(coefs, m.hidden_size, m.vocab_size), base)
            full, base = verify_cache[vkey]
            record(backend, chain, "verify", B, cyc.index, full, base, cs.vocab, keep_rows)
            add(backend, "host_fpga_transfers", sum(host_transfer_bytes(f, dec, B, L).values()), "computed", B)
            res[backend].tokens += cyc.tokens
            res[backend].tokens_by_batch[B] += cyc.tokens
            res[backend].cycles_by_batch[B] += 1
    # per-call averages (per cycle)
    for (backend, B, _comp), pc in per_call.items():
        n = res[backend].cycles_by_batch[B]
        pc["B_in"] /= n
        pc["B_out"] /= n
    notes.append("target-model forward (weights, KV, logits write) is outside both backends and excluded; it runs on "
                 "the host, so its logits and hidden states reach the FPGA by DMA every verify step "
                 "(host_fpga_transfers, computed, the same on every variant)")
    notes.append("bytes are 64-B DRAM beats: each port's traffic of a step rounded up to whole beats (a lower bound: "
                 "one contiguous burst per port and step)")
    return BytesResult(trace, f, res["unfused"], res["fused"], hw_rows, per_call, notes, variants=res)


def _trace_tree(rng, Q: int, S: int) -> np.ndarray:
    """A verify tree whose first-child path is min(S-1, Q-1) deep (so every trace accept length is
    reachable), other tokens hung under random earlier tokens."""
    par = np.full(Q, -1, np.int64)
    depth = min(S - 1, Q - 1)
    for t in range(1, Q):
        par[t] = t - 1 if t <= depth else int(rng.integers(0, t))
    return par


# ---------------------------------------------------------------------------------------------
# CSV writers


def write_bytes_csv(r: BytesResult, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sha = r.trace.contract_sha256
    rows = []
    for bc in (r.variants or {"unfused": r.unfused, "fused": r.fused}).values():
        comps = sorted(set(bc.comp))
        for comp in comps:
            for B in sorted(bc.cycles_by_batch):
                nb = bc.by_batch.get((B, comp), 0.0)
                rows.append({"backend": bc.backend, "component": comp, "batch": B, "cycles": bc.cycles_by_batch[B],
                             "bytes_per_cycle": nb / bc.cycles_by_batch[B], "bytes_total": nb,
                             "tokens_total": bc.tokens_by_batch[B], "bytes_per_token": nb / max(bc.tokens_by_batch[B], 1),
                             "provenance": bc.prov[comp], "method": _method(bc.prov[comp])})
            rows.append({"backend": bc.backend, "component": comp, "batch": "all",
                         "cycles": sum(bc.cycles_by_batch.values()), "bytes_per_cycle": "",
                         "bytes_total": bc.comp[comp], "tokens_total": bc.tokens,
                         "bytes_per_token": bc.comp[comp] / max(bc.tokens, 1), "provenance": bc.prov[comp],
                         "method": _method(bc.prov[comp])})
        provs = sorted(set(bc.prov.values()))
        rows.append({"backend": bc.backend, "component": "TOTAL", "batch": "all",
                     "cycles": sum(bc.cycles_by_batch.values()), "bytes_per_cycle": "", "bytes_total": bc.total,
                     "tokens_total": bc.tokens, "bytes_per_token": bc.bytes_per_token, "provenance": "+".join(provs),
                     "method": "sum of the rows above"})
        p0 = sum(v for k, v in bc.comp.items() if bc.prov.get(k) == "csim")
        rows.append({"backend": bc.backend, "component": "TOTAL_CSIM_ONLY", "batch": "all",
                     "cycles": sum(bc.cycles_by_batch.values()), "bytes_per_cycle": "", "bytes_total": p0,
                     "tokens_total": bc.tokens, "bytes_per_token": p0 / max(bc.tokens, 1), "provenance": "csim",
                     "method": "P0 kernels + draft LM head (counted)"})
        for B in sorted(bc.cycles_by_batch):
            nb = sum(v for (b, _), v in bc.by_batch.items() if b == B)
            rows.append({"backend": bc.backend, "component": "TOTAL_POINT", "batch": B, "cycles": bc.cycles_by_batch[B],
                         "bytes_per_cycle": nb / bc.cycles_by_batch[B], "bytes_total": nb,
                         "tokens_total": bc.tokens_by_batch[B], "bytes_per_token": nb / max(bc.tokens_by_batch[B], 1),
                         "provenance": "+".join(provs), "method": "sum of the components at this operating point"})
    rows.append({"backend": "ratio", "component": "TOTAL", "batch": "all", "cycles": "", "bytes_per_cycle": "",
                 "bytes_total": "", "tokens_total": "", "bytes_per_token": r.ratio, "provenance": "csim+computed",
                 "method": "unfused bytes/token / fused bytes/token"})
    rows.append({"backend": "ratio", "component": "TOTAL_CSIM_ONLY", "batch": "all", "cycles": "", "bytes_per_cycle": "",
                 "bytes_total": "", "tokens_total": "", "bytes_per_token": r.ratio_p0(), "provenance": "csim",
                 "method": "counted parts only"})
    if r.variants:
        for name, (num, den) in RATIOS.items():
            for B in [*r.batches, None]:
                rows.append({"backend": "ratio", "component": name, "batch": "all" if B is None else B, "cycles": "",
                             "bytes_per_cycle": "", "bytes_total": "", "tokens_total": "",
                             "bytes_per_token": r.ratio_of(name, B), "provenance": "csim+computed",
                             "method": f"{num} bytes/token / {den} bytes/token"
                                       + (" (pooled over the trace)" if B is None else " at this operating point")})
    with atomic.atomic_open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=BYTES_COLUMNS)
        w.writeheader()
        for row in rows:
            # the acceptance the trace drew from: the byte gate refuses these rows once that file changes
            w.writerow({"contract_sha256": sha, **row, "accept_source": r.trace.accept_source,
                        "accept_sha256": r.trace.accept_sha256})
    return path


def _method(prov: str) -> str:
    return {"csim": "C-sim port counters (hls/fused), scaled affinely in H and V",
            "computed": "computed from [fpga.model] (drafter weights/KV/activations, host<->FPGA DMA)"}.get(prov, prov)


def write_hw_counters_csv(r: BytesResult, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=HW_COLUMNS)
        w.writeheader()
        for row in r.hw_rows:
            w.writerow({"contract_sha256": r.trace.contract_sha256, **row})
    return path


def read_csv(path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))
