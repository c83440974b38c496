#!/usr/bin/env python
"""Train the embedded default model pair (byte-level Llama target + EAGLE-style draft head).

Corpus: the plain-text licenses under /usr/share/common-licenses (present on every Debian/Ubuntu
machine; no network). Runs in a few minutes on 2 CPU cores and writes models/default/{target,draft}
(safetensors in bf16 + config.json + tokenizer.json) and models/default/TRAINING.md.

    PYTHONPATH=src python scripts/train_default_pair.py --out models/default \
        --target-seconds 240 --draft-seconds 150
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from eagle4.models.eagle import EagleDraft  # noqa: E402
from eagle4.models.llama import LlamaConfig, LlamaModel  # noqa: E402
from eagle4.models.tokenizer import ByteTokenizer  # noqa: E402

CORPUS_DIR = Path("/usr/share/common-licenses")


def corpus_files(root: Path = CORPUS_DIR) -> list[Path]:
    seen, out = set(), []
    for p in sorted(root.iterdir()):
        real = p.resolve()
        if real.is_file() and real not in seen:
            seen.add(real)
            out.append(p)
    return out


def load_corpus(files) -> tuple[bytes, list[dict]]:
    blobs, meta = [], []
    for p in files:
        b = p.read_bytes()
        blobs.append(b)
        meta.append({"path": str(p), "bytes": len(b), "sha256": hashlib.sha256(b).hexdigest()})
    return b"\n\n".join(blobs), meta


def batches(data: torch.Tensor, T: int, bs: int, gen: torch.Generator):
    n = data.numel() - T - 2
    while True:
        idx = torch.randint(0, n, (bs,), generator=gen)
        yield torch.stack([data[i: i + T + 1] for i in idx.tolist()])


def lr_at(step, total, peak, warm=50):
    if step < warm:
        return peak * (step + 1) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warm) / max(1, total - warm)))) + peak * 0.05


def save_model(module, cfg: dict, out: Path, tok: ByteTokenizer, skip=()):
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    sd = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in module.state_dict().items() if k not in skip}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (out / "tokenizer.json").write_text(json.dumps(tok.to_json(), indent=2) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="models/default")
    ap.add_argument("--target-seconds", type=float, default=300)
    ap.add_argument("--draft-seconds", type=float, default=200)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (1 is fastest on a shared 2-core machine: no spin-wait contention)")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--intermediate", type=int, default=384)
    ap.add_argument("--layers", type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    out = Path(a.out)
    tok = ByteTokenizer()
    files = corpus_files()
    text, meta = load_corpus(files)
    data = torch.tensor(list(text), dtype=torch.long)
    print(f"corpus: {len(files)} files, {len(text)} bytes", flush=True)

    tcfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=a.hidden, intermediate_size=a.intermediate,
                       num_hidden_layers=a.layers, num_attention_heads=a.hidden // 32, num_key_value_heads=2, max_position_embeddings=1024,
                       rope_theta=10000.0, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id)
    target = LlamaModel(tcfg)
    gen = torch.Generator().manual_seed(a.seed)
    it = batches(data, a.seq, a.batch, gen)
    opt = torch.optim.AdamW(target.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.95))
    t0 = time.time()
    step, est_total, tl = 0, 10_000, float("nan")
    while time.time() - t0 < a.target_seconds:
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
            est_total = int(20 * a.target_seconds / (time.time() - t0))
        tl = 0.98 * tl + 0.02 * loss.item() if step > 1 else loss.item()
        if step % 50 == 0:
            print(f"target step {step}/{est_total} loss {tl:.3f} ({time.time() - t0:.0f}s)", flush=True)
    target_steps, target_loss, target_time = step, tl, time.time() - t0
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)

    dcfg = LlamaConfig(**{**tcfg.to_dict(), "num_hidden_layers": 1, "architectures": ["EagleLlamaDraft"]})
    draft = EagleDraft(dcfg)
    draft.embed_tokens.weight.data.copy_(target.model.embed_tokens.weight)
    draft.norm.weight.data.copy_(target.model.norm.weight)
    draft.lm_head.weight.data.copy_(target.lm_head.weight)
    for m in (draft.embed_tokens, draft.norm, draft.lm_head):
        for p in m.parameters():
            p.requires_grad_(False)
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=2e-3, weight_decay=0.0, betas=(0.9, 0.95))
    t0 = time.time()
    step, est_total, dl, dacc = 0, 10_000, float("nan"), float("nan")
    while time.time() - t0 < a.draft_seconds:
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
            est_total = int(20 * a.draft_seconds / (time.time() - t0))
        acc = (dlog.argmax(-1) == tgt_logits.argmax(-1)).float().mean().item()
        dl = 0.98 * dl + 0.02 * loss.item() if step > 1 else loss.item()
        dacc = 0.98 * dacc + 0.02 * acc if step > 1 else acc
        if step % 50 == 0:
            print(f"draft step {step}/{est_total} loss {dl:.3f} top1-agree {dacc:.3f} ({time.time() - t0:.0f}s)",
                  flush=True)
    draft_steps, draft_time = step, time.time() - t0

    save_model(target, tcfg.to_dict(), out / "target", tok)
    save_model(draft, dcfg.to_dict(), out / "draft", tok, skip=("embed_tokens.weight", "norm.weight", "lm_head.weight"))
    summary = {
        "command": "PYTHONPATH=src python " + " ".join([f"scripts/{Path(__file__).name}"] + (argv or sys.argv[1:])),
        "corpus": meta, "corpus_bytes": len(text),
        "target": {"steps": target_steps, "seconds": round(target_time, 1), "final_train_loss_nats": round(target_loss, 4)},
        "draft": {"steps": draft_steps, "seconds": round(draft_time, 1), "final_train_loss": round(dl, 4),
                  "train_top1_agreement": round(dacc, 4)},
        "torch": torch.__version__, "python": platform.python_version(), "threads": a.threads, "seed": a.seed,
        "seq": a.seq, "batch": a.batch,
    }
    (out / "training_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "corpus"}, indent=2))
    write_training_md(out)


def measure(out: Path, contract_path: str = "contracts/default.toml") -> dict:
    """Greedy speculative decoding of the default prompts with the freshly written pair (ref kernels)."""
    import numpy as np

    from eagle4.contract import load_contract
    from eagle4.workload.engine import DecodeParams, LocalEngine

    c = load_contract(Path(__file__).resolve().parents[1] / contract_path, verify_files=False)
    eng = LocalEngine(out / "target", out / "draft", DecodeParams.from_contract(c), "ref")
    prompts = [p["text"] for p in c.load_prompts()]
    ids = eng.encode_prompts(prompts, c.prompts.prompt_tokens)
    t0 = time.time()
    res = eng.generate(ids, c.prompts.output_tokens, [0.0], seed=1)
    wall = time.time() - t0
    base = eng.generate_target_only(ids, c.prompts.output_tokens)
    acc = [a for r in res for a in r.accept_lengths]
    return {"mean_acceptance_length": float(np.mean(acc)), "verify_steps": len(acc),
            "greedy_equal": all(r.output_ids == b for r, b in zip(res, base, strict=False)),
            "tokens_per_s": sum(len(r.output_ids) for r in res) / wall, "batch": len(ids),
            "output_tokens": c.prompts.output_tokens, "sample": eng.tokenizer.decode(res[0].output_ids)}


def write_training_md(out: Path) -> None:
    s = json.loads((out / "training_summary.json").read_text())
    m = measure(out)
    s["measured"] = m
    (out / "training_summary.json").write_text(json.dumps(s, indent=2) + "\n")

    def size(p):
        return sum(f.stat().st_size for f in p.iterdir())

    L = ["# Embedded default model pair", "",
         "Byte-level Llama-architecture target and an EAGLE-style draft head (one decoder layer fed",
         "`fc([embed(token); target feature])`, sharing the target's embedding, final norm and LM head),",
         "trained from scratch on CPU by `scripts/train_default_pair.py`. Weights are stored in bf16",
         "(safetensors) and loaded as float32. Tokenizer: bytes 0..255, BOS=256, EOS=257, PAD=258 (vocab 260).", "",
         "## Command", "", "```", s["command"], "```", "",
         f"torch {s['torch']}, Python {s['python']}, {s['threads']} thread(s), seed {s['seed']}, "
         f"sequence {s['seq']}, batch {s['batch']}. Training is time-budgeted (steps depend on the machine); the",
         "committed weights are the artifact, the command reproduces a pair of the same kind.", "",
         "## Data (offline: /usr/share/common-licenses, Debian/Ubuntu base system)", "",
         f"{len(s['corpus'])} files, {s['corpus_bytes']} bytes (symlinked duplicates dropped).", "",
         "| file | bytes | sha256 |", "|---|---|---|"]
    L += [f"| `{c['path']}` | {c['bytes']} | `{c['sha256']}` |" for c in s["corpus"]]
    t, d = s["target"], s["draft"]
    tc = json.loads((out / "target" / "config.json").read_text())
    L += ["", "## Models", "",
          f"* target: {tc['num_hidden_layers']} layers, hidden {tc['hidden_size']}, intermediate {tc['intermediate_size']}, "
          f"{tc['num_attention_heads']} heads / {tc['num_key_value_heads']} KV heads (GQA), vocab {tc['vocab_size']}; "
          f"{size(out / 'target') / 1e6:.2f} MB on disk",
          f"* draft: 1 decoder layer + fc(2H -> H); {size(out / 'draft') / 1e6:.2f} MB on disk", "",
          "## Measured figures", "",
          f"* target: {t['steps']} steps in {t['seconds']} s, final train loss {t['final_train_loss_nats']} nats/byte",
          f"* draft: {d['steps']} steps in {d['seconds']} s, final loss {d['final_train_loss']}, "
          f"top-1 agreement with the target on training batches {d['train_top1_agreement']:.3f}",
          f"* **mean acceptance length {m['mean_acceptance_length']:.3f}** tokens per verify step (accepted + bonus) on",
          f"  the {m['batch']} default prompts, greedy, {m['output_tokens']} output tokens, default contract tree",
          f"  ({m['verify_steps']} request-steps); greedy speculative output == target greedy: {m['greedy_equal']}",
          f"* CPU throughput of that run (ref kernels, batch {m['batch']}): {m['tokens_per_s']:.1f} tokens/s", "",
          "Sample continuation of prompt 0:", "", "```", m["sample"], "```", ""]
    (out / "TRAINING.md").write_text("\n".join(L))
    print(f"acceptance {m['mean_acceptance_length']:.3f}, greedy equal {m['greedy_equal']}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--report-only"]:
        torch.set_num_threads(1)
        write_training_md(Path(sys.argv[2] if len(sys.argv) > 2 else "models/default"))
    else:
        main()
