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
import os
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
    ap.add_argument("--target-seconds", type=float, default=240)
    ap.add_argument("--draft-seconds", type=float, default=150)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    out = Path(a.out)
    tok = ByteTokenizer()
    files = corpus_files()
    text, meta = load_corpus(files)
    data = torch.tensor(list(text), dtype=torch.long)
    print(f"corpus: {len(files)} files, {len(text)} bytes", flush=True)

    tcfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=192, intermediate_size=512, num_hidden_layers=3,
                       num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=1024,
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


if __name__ == "__main__":
    main()
