#!/usr/bin/env python
"""Train the embedded default model pair: a byte-level BPE tokenizer (16384 tokens, ``tokenizers``),
a small Llama target and an EAGLE-style draft head, on CPU, from a local corpus; write the held-out
prompt set the default contract measures on.

Corpus (offline, on every machine with CPython): the docstrings of the Python standard library of the
running interpreter (``sysconfig.get_paths()["stdlib"]``; ``test``/``tests``, ``idlelib``,
``lib2to3``, ``turtledemo``, ``site-packages`` left out), extracted with :mod:`ast` in sorted path
order. Licence: PSF License Agreement (Python's ``LICENSE.txt``, its sha256 recorded). The files are
split by a hash of their path: 1 in 8 is held out; the prompts (``data/prompts/default.jsonl``) come
only from held-out files and none of their text occurs in the training text.

Deterministic: fixed split, fixed order, seeded sampling, one torch thread; training is time-budgeted
(steps depend on the machine), so the committed weights are the artifact and the command reproduces a
pair of the same kind. The same Python version gives the same corpus (its sha256 is recorded).

    PYTHONPATH=src python scripts/train_default_pair.py --out models/default \
        --target-seconds 360 --draft-seconds 240
    PYTHONPATH=src python scripts/train_default_pair.py --report-only models/default   # re-measure only
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import os
import platform
import re
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from eagle4.models.eagle import EagleDraft  # noqa: E402
from eagle4.models.llama import LlamaConfig, LlamaModel  # noqa: E402
from eagle4.models.tokenizer import BOS, EOS, PAD, HFTokenizer, add_bos_template  # noqa: E402

SKIP_PARTS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "__pycache__"}
HELD_OUT_MOD = 8           # a file is held out when sha256(relative path)[0] % 8 == 0
PROMPT_CHARS = 480         # prompt text length (whitespace collapsed); >= 64 tokens of the BPE
PROMPT_MIN_CHARS = 320
N_PROMPTS = 32
PROMPTS_PATH = REPO / "data" / "prompts" / "default.jsonl"
COUNTS_NAME = "training_token_counts.npy"


# ---- corpus -------------------------------------------------------------------------------------------
def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def corpus_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if not SKIP_PARTS & set(p.relative_to(root).parts))


def is_held_out(rel: str) -> bool:
    return hashlib.sha256(rel.encode()).digest()[0] % HELD_OUT_MOD == 0


def docstrings(src: bytes) -> list[str]:
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            d = ast.get_docstring(node)
            if d and d.strip():
                out.append(d.strip())
    return out


def load_corpus(root: Path) -> dict:
    train, held, files = [], [], []
    for p in corpus_files(root):
        rel = p.relative_to(root).as_posix()
        raw = p.read_bytes()
        docs = docstrings(raw)
        if not docs:
            continue
        split = "held_out" if is_held_out(rel) else "train"
        files.append({"path": rel, "sha256": hashlib.sha256(raw).hexdigest(), "docstrings": len(docs), "split": split})
        (held if split == "held_out" else train).extend((rel, d) for d in docs)
    text = "\n\n".join(d for _, d in train)
    lic = root / "LICENSE.txt"
    return {"root": str(root), "files": files, "train": train, "held": held, "text": text,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "licence_file": str(lic), "licence_sha256": hashlib.sha256(lic.read_bytes()).hexdigest() if lic.is_file() else ""}


def held_out_prompts(corpus: dict, n: int = N_PROMPTS) -> list[dict]:
    """Deterministic prompts from held-out files whose text (and every 48-char window of it sampled
    every 16 chars) does not occur in the training text."""
    train_text = re.sub(r"\s+", " ", corpus["text"])
    cands = []
    for rel, d in corpus["held"]:
        t = re.sub(r"\s+", " ", d).strip()
        if len(t) < PROMPT_MIN_CHARS:
            continue
        t = t[:PROMPT_CHARS]
        if any(t[i: i + 48] in train_text for i in range(0, len(t) - 48, 16)):
            continue
        cands.append((hashlib.sha256(t.encode()).hexdigest(), rel, t))
    cands.sort()
    seen, out = set(), []
    for h, rel, t in cands:   # at most three prompts per file, for variety
        if sum(1 for r in seen if r[0] == rel) >= 3:
            continue
        seen.add((rel, h))
        out.append({"id": f"{rel.removesuffix('.py').replace('/', '.')}-{h[:8]}", "source": f"stdlib:{rel}", "text": t})
        if len(out) == n:
            break
    if len(out) < n:
        raise RuntimeError(f"only {len(out)} held-out prompts found (need {n})")
    return out


# ---- tokenizer ----------------------------------------------------------------------------------------
def train_tokenizer(texts: list[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, special_tokens=[BOS, EOS, PAD],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=tr)
    return HFTokenizer(tok)


# ---- training -----------------------------------------------------------------------------------------
def batches(data: torch.Tensor, T: int, bs: int, gen: torch.Generator):
    n = data.numel() - T - 2
    while True:
        idx = torch.randint(0, n, (bs,), generator=gen)
        yield torch.stack([data[i: i + T + 1] for i in idx.tolist()])


def lr_at(step, total, peak, warm=50):
    if step < warm:
        return peak * (step + 1) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm)))) + peak * 0.05


def _atomic_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o644)  # mkstemp makes 0600; committed files are world-readable
    os.replace(tmp, path)


def save_model(module, cfg: dict, out: Path, tok: HFTokenizer | None, skip=()):
    """bf16 safetensors + config.json (+ tokenizer.json for the target; the draft head uses the target's)."""
    from safetensors.torch import save

    sd = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in module.state_dict().items() if k not in skip}
    _atomic_bytes(out / "model.safetensors", save(sd, metadata={"format": "pt"}))
    _atomic_bytes(out / "config.json", (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
    if tok is not None:
        add_bos_template(tok._tok)  # HF clients add the BOS the engine adds
        _atomic_bytes(out / "tokenizer.json", tok._tok.to_str().encode())
    else:
        (out / "tokenizer.json").unlink(missing_ok=True)


def init_weights(model: torch.nn.Module, std: float = 0.02) -> None:
    """HF Llama's initializer (normal, std 0.02): torch's default N(0, 1) embedding, tied to the LM head,
    starts with logits of std ~sqrt(H) and a loss far above log(V)."""
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Embedding)):
            torch.nn.init.normal_(m.weight, 0.0, std)
        if isinstance(m, torch.nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)


def train_target(tcfg, it, seconds, log):
    target = LlamaModel(tcfg)
    init_weights(target)
    opt = torch.optim.AdamW(target.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.95))
    t0, step, est_total, tl = time.time(), 0, 10_000, float("nan")
    while time.time() - t0 < seconds:
        x = next(it)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, est_total, 3e-3)
        _, logits = target.forward_train(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, tcfg.vocab_size), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(target.parameters(), 1.0)
        opt.step()
        step += 1
        if step == 20:  # calibrate the cosine schedule to the time budget
            est_total = int(20 * seconds / (time.time() - t0))
        tl = 0.98 * tl + 0.02 * loss.item() if step > 1 else loss.item()
        if step % 50 == 0:
            log(f"target step {step}/{est_total} loss {tl:.3f} ({time.time() - t0:.0f}s)")
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return target, {"steps": step, "seconds": round(time.time() - t0, 1), "final_train_loss_nats": round(tl, 4)}


def train_draft(target, tcfg, it, seconds, log):
    dcfg = LlamaConfig(**{**tcfg.to_dict(), "num_hidden_layers": 1, "tie_word_embeddings": False,
                          "architectures": ["EagleLlamaDraft"]})
    draft = EagleDraft(dcfg)
    init_weights(draft)
    draft.embed_tokens.weight.data.copy_(target.model.embed_tokens.weight)
    draft.norm.weight.data.copy_(target.model.norm.weight)
    draft.lm_head.weight.data.copy_(target.lm_head.weight)
    for m in (draft.embed_tokens, draft.norm, draft.lm_head):
        for p in m.parameters():
            p.requires_grad_(False)
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=0.0, betas=(0.9, 0.95))
    t0, step, est_total, dl, dacc = time.time(), 0, 10_000, float("nan"), float("nan")
    while time.time() - t0 < seconds:
        x = next(it)
        with torch.no_grad():
            h, tlog = target.forward_train(x[:, :-1])          # h_p, logits_p for p = 0..T-1
        for g in opt.param_groups:
            g["lr"] = lr_at(step, est_total, 2e-3)
        feats = h[:, :-1]
        feats = feats + torch.randn_like(feats) * 0.02 * feats.pow(2).mean().sqrt()  # EAGLE-style noise
        g_out, dlog = draft.forward_train(x[:, 1:-1], feats)   # inputs (x_{p+1}, h_p), p = 0..T-2
        tgt_h, tgt_logits = h[:, 1:], tlog[:, 1:]              # aims: h_{p+1}, target distribution at p+1
        reg = F.smooth_l1_loss(g_out, tgt_h)
        kl = -(F.softmax(tgt_logits, -1) * F.log_softmax(dlog, -1)).sum(-1).mean()
        loss = reg + 0.5 * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        if step == 20:
            est_total = int(20 * seconds / (time.time() - t0))
        acc = (dlog.argmax(-1) == tgt_logits.argmax(-1)).float().mean().item()
        dl = 0.98 * dl + 0.02 * loss.item() if step > 1 else loss.item()
        dacc = 0.98 * dacc + 0.02 * acc if step > 1 else acc
        if step % 50 == 0:
            log(f"draft step {step}/{est_total} loss {dl:.3f} top1-agree {dacc:.3f} ({time.time() - t0:.0f}s)")
    return draft, dcfg, {"steps": step, "seconds": round(time.time() - t0, 1), "final_train_loss": round(dl, 4),
                         "train_top1_agreement": round(dacc, 4)}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/default")
    ap.add_argument("--prompts-out", default=str(PROMPTS_PATH.relative_to(REPO)))
    ap.add_argument("--vocab", type=int, default=16384)
    ap.add_argument("--target-seconds", type=float, default=360)
    ap.add_argument("--draft-seconds", type=float, default=240)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 is fastest on a shared 2-core machine: no spin-wait contention)")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--intermediate", type=int, default=192)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--reuse-target", action="store_true",
                    help="keep the target (and tokenizer) already in --out and train only the draft head")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    out = Path(a.out)

    def log(s):
        print(s, flush=True)

    corpus = load_corpus(stdlib_root())
    n_train = sum(f["split"] == "train" for f in corpus["files"])
    log(f"corpus: {n_train} train / {len(corpus['files']) - n_train} held-out files, {len(corpus['train'])} "
        f"docstrings, {len(corpus['text'])} chars, sha256 {corpus['sha256'][:12]}")
    prompts = held_out_prompts(corpus)
    if a.reuse_target:
        tok = HFTokenizer.from_file(out / "target" / "tokenizer.json")
    else:
        tok = train_tokenizer([d for _, d in corpus["train"]], a.vocab)
    log(f"tokenizer: {tok.vocab_size} tokens")
    ids: list[int] = []
    for doc in tok.encode_batch([d for _, d in corpus["train"]]):
        ids += doc + [tok.eos_id]
    data = torch.tensor(ids, dtype=torch.long)
    counts = np.bincount(data.numpy(), minlength=tok.vocab_size).astype(np.int64)
    log(f"training tokens: {data.numel()} ({len(corpus['text']) / data.numel():.2f} chars/token)")

    tcfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=a.hidden, intermediate_size=a.intermediate,
                       num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
                       max_position_embeddings=1024, rope_theta=10000.0, tie_word_embeddings=True,
                       bos_token_id=tok.bos_id, eos_token_id=tok.eos_id)
    it = batches(data, a.seq, a.batch, torch.Generator().manual_seed(a.seed))
    if a.reuse_target:
        from eagle4.models.llama import load_target

        target = load_target(out / "target")
        for q in target.parameters():
            q.requires_grad_(False)
        tcfg = target.config
        tsum = json.loads((out / "training_summary.json").read_text())["target"]
        for _ in range(tsum["steps"]):  # the batches the target saw: the draft continues the same stream
            next(it)
    else:
        target, tsum = train_target(tcfg, it, a.target_seconds, log)
    draft, dcfg, dsum = train_draft(target, tcfg, it, a.draft_seconds, log)

    save_model(target, tcfg.to_dict(), out / "target", tok, skip=("lm_head.weight",))  # tied to the embedding
    save_model(draft, dcfg.to_dict(), out / "draft", None, skip=("embed_tokens.weight", "norm.weight", "lm_head.weight"))
    buf = _npy_bytes(counts)
    _atomic_bytes(out / COUNTS_NAME, buf)
    lines = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in prompts)
    _atomic_bytes(REPO / a.prompts_out, lines.encode())
    command = "PYTHONPATH=src python " + " ".join([f"scripts/{Path(__file__).name}"] + list(argv or sys.argv[1:]))
    if a.reuse_target:  # the target came from an earlier command: keep both
        command = json.loads((out / "training_summary.json").read_text())["command"].split("\n")[0] + "\n" + command
    summary = {
        "command": command,
        "corpus": {"kind": "python-stdlib-docstrings", "python": platform.python_version(), "root": corpus["root"],
                   "licence": "PSF-2.0 (Python Software Foundation License Agreement)",
                   "licence_file": corpus["licence_file"], "licence_sha256": corpus["licence_sha256"],
                   "train_text_sha256": corpus["sha256"], "train_chars": len(corpus["text"]),
                   "train_docstrings": len(corpus["train"]), "held_out_rule": f"sha256(path)[0] % {HELD_OUT_MOD} == 0",
                   "files": corpus["files"]},
        "tokenizer": {"kind": "byte-level BPE (tokenizers)", "vocab_size": tok.vocab_size, "specials": [BOS, EOS, PAD],
                      "sha256": _sha(out / "target" / "tokenizer.json")},
        "training_tokens": int(data.numel()),
        "token_counts": {"path": COUNTS_NAME, "sha256": hashlib.sha256(buf).hexdigest(), "tokens": int(counts.sum())},
        "prompts": {"path": a.prompts_out, "sha256": _sha(REPO / a.prompts_out), "count": len(prompts),
                    "source": "held-out files only"},
        "target": tsum, "draft": dsum,
        "torch": torch.__version__, "python": platform.python_version(), "threads": a.threads, "seed": a.seed,
        "seq": a.seq, "batch": a.batch,
    }
    _atomic_bytes(out / "training_summary.json", (json.dumps(summary, indent=2) + "\n").encode())
    log(json.dumps({k: v for k, v in summary.items() if k != "corpus"}, indent=2))
    write_training_md(out)


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    b = io.BytesIO()
    np.save(b, a, allow_pickle=False)
    return b.getvalue()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def measure(out: Path, contract_path: str = "contracts/default.toml") -> dict:
    """Greedy speculative decoding of the contract's (held-out) prompts with the pair in ``out``."""
    from eagle4.contract import load_contract
    from eagle4.workload.engine import DeviceEngine

    c = load_contract(REPO / contract_path, verify_files=False)
    pair = c.model.model_copy(update={"target": str(out / "target"), "draft": str(out / "draft")})
    eng = DeviceEngine(c.model_copy(update={"model": pair}), "ref")
    prompts = [p["text"] for p in c.load_prompts()]
    ids = eng.encode_prompts(prompts, c.prompts.prompt_tokens)
    t0 = time.time()
    res = eng.generate(ids, c.prompts.output_tokens, [0.0], seed=1)
    wall = time.time() - t0
    base = eng.generate_target_only(ids, c.prompts.output_tokens)
    acc = [a for r in res for a in r.accept_lengths]
    return {"mean_acceptance_length": float(np.mean(acc)), "verify_steps": len(acc),
            "greedy_equal": all(r.output_ids == b for r, b in zip(res, base, strict=True)),
            "tokens_per_s": sum(len(r.output_ids) for r in res) / wall, "batch": len(ids),
            "prompt_tokens": [len(x) for x in ids], "output_tokens": c.prompts.output_tokens,
            "sample_prompt": prompts[0][-120:], "sample": eng.tokenizer.decode(res[0].output_ids)}


def write_training_md(out: Path) -> None:
    s = json.loads((out / "training_summary.json").read_text())
    m = measure(out)
    s["measured"] = m
    _atomic_bytes(out / "training_summary.json", (json.dumps(s, indent=2) + "\n").encode())

    def size(p):
        return sum(f.stat().st_size for f in p.iterdir())

    c, t, d = s["corpus"], s["target"], s["draft"]
    tc = json.loads((out / "target" / "config.json").read_text())
    n_train = sum(f["split"] == "train" for f in c["files"])
    L = ["# Embedded default model pair", "",
         "Byte-level BPE tokenizer (`tokenizers`), a small Llama-architecture target and an EAGLE-style draft",
         "head (one decoder layer fed `fc([embed(token); target feature])`, sharing the target's embedding,",
         "final norm and LM head), trained from scratch on CPU by `scripts/train_default_pair.py`. Weights",
         "are stored in bf16 (safetensors) and loaded as float32.", "",
         "## Command", "", "```", s["command"], "```", "",
         f"torch {s['torch']}, Python {s['python']}, {s['threads']} thread(s), seed {s['seed']}, "
         f"sequence {s['seq']}, batch {s['batch']}. Training is time-budgeted (steps depend on the machine); the",
         "committed weights are the artifact, the command reproduces a pair of the same kind.", "",
         "## SOURCE and licence of the corpus", "",
         f"* Docstrings of the CPython {c['python']} standard library (`{c['root']}`), extracted with `ast` in sorted",
         "  path order (`test`, `tests`, `idlelib`, `lib2to3`, `turtledemo`, `site-packages` left out).",
         f"* Licence: {c['licence']}; `{c['licence_file']}` sha256 `{c['licence_sha256']}`.",
         f"* Split by file: held out when {c['held_out_rule']}; {n_train} training files "
         f"({c['train_docstrings']} docstrings, {c['train_chars']} characters, text sha256 `{c['train_text_sha256']}`),",
         f"  {len(c['files']) - n_train} held-out files. Every file with its sha256 and split: `training_summary.json`.",
         f"* Prompts (`{s['prompts']['path']}`, {s['prompts']['count']}): from held-out files only; no 48-character",
         "  window of a prompt (sampled every 16 characters) occurs in the training text.", "",
         "## Tokenizer", "",
         f"* {s['tokenizer']['kind']}, {s['tokenizer']['vocab_size']} tokens incl. specials {', '.join(s['tokenizer']['specials'])}"
         f" (ids 0, 1, 2); {s['training_tokens']} training tokens.",
         f"* `{s['token_counts']['path']}`: the count of every token id in the training tokens (the hot-vocabulary",
         "  approximation picks its hot set from it, never from the prompts).", "",
         "## Models", "",
         f"* target: {tc['num_hidden_layers']} layers, hidden {tc['hidden_size']}, intermediate {tc['intermediate_size']}, "
         f"{tc['num_attention_heads']} heads / {tc['num_key_value_heads']} KV heads (GQA), vocab {tc['vocab_size']}, "
         f"tied embedding; {size(out / 'target') / 1e6:.2f} MB on disk",
         f"* draft: 1 decoder layer + fc(2H -> H); {size(out / 'draft') / 1e6:.2f} MB on disk", "",
         "## Measured figures (CPU)", "",
         f"* target: {t['steps']} steps in {t['seconds']} s, final train loss {t['final_train_loss_nats']} nats/token",
         f"* draft: {d['steps']} steps in {d['seconds']} s, final loss {d['final_train_loss']}, "
         f"top-1 agreement with the target on training batches {d['train_top1_agreement']:.3f}",
         f"* **mean acceptance length {m['mean_acceptance_length']:.3f}** tokens per verify step (accepted + bonus) on",
         f"  the {m['batch']} held-out prompts, greedy, {m['output_tokens']} output tokens, default contract tree",
         f"  ({m['verify_steps']} request-steps); greedy speculative output == target greedy: {m['greedy_equal']}",
         f"* CPU throughput of that run (ref kernels, batch {m['batch']}): {m['tokens_per_s']:.1f} tokens/s", "",
         "Sample (end of prompt 0, then the continuation):", "", "```", m["sample_prompt"], "---", m["sample"], "```", ""]
    _atomic_bytes(out / "TRAINING.md", "\n".join(L).encode())
    print(f"acceptance {m['mean_acceptance_length']:.3f}, greedy equal {m['greedy_equal']}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report-only"]:
        torch.set_num_threads(1)
        write_training_md(Path(sys.argv[2] if len(sys.argv) > 2 else "models/default"))
    else:
        main()
