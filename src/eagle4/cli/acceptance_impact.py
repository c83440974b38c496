"""``eagle4 acceptance-impact``: measure the mean acceptance length of the exact draft and of the fused
FPGA design's approximated drafts (hot vocabulary, int8 transport, both) on the engine and
write ``reports/acceptance_impact.csv`` (gate ``approximation_acceptance_impact``).

    eagle4 acceptance-impact --contract contracts/default.toml --out reports/acceptance_impact.csv

See ``eagle4.workload.approximations`` for what each approximation does and how the hot set is chosen.
"""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("acceptance-impact",
                       help="acceptance-length impact of the fused draft's hot vocabulary / int8 transport")
    p.add_argument("--contract", default="contracts/default.toml")
    p.add_argument("--out", default="reports/acceptance_impact.csv")
    p.add_argument("--backend", default="ref", help="kernel backend (default ref)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompts", type=int, default=None, help="first N prompts of the contract (default: all)")
    p.add_argument("--output-tokens", type=int, default=None, help="default: the contract's output_tokens")
    p.add_argument("--hot-source", choices=["training_corpus", "prompts"], default="training_corpus",
                   help="token frequencies the hot set is picked from (default: the pair's training corpus)")
    p.add_argument("--split-int8", action="store_true",
                   help="also measure int8 LM head and int8 drafter separately (extra rows: they enter the gate's max)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--no-gate", action="store_true", help="do not evaluate the gate after writing")
    p.set_defaults(func=_run)


def _run(a) -> int:
    from pathlib import Path

    import torch

    from eagle4.contract import load_contract
    from eagle4.workload import approximations as A

    if a.threads:
        torch.set_num_threads(a.threads)
    c = load_contract(a.contract)
    configs = A.CONFIGS + (A.SPLIT_CONFIGS if a.split_int8 else [])
    rows = A.measure(c, configs=configs, n_prompts=a.prompts, output_tokens=a.output_tokens,
                     hot_source=a.hot_source, backend=a.backend, device=a.device)
    p = A.write_csv(rows, a.out)
    print(f"{'config':26s} {'acceptance':>10s} {'impact':>9s}  95% CI (prompt bootstrap)")
    for r in rows:
        print(f"{r['config']:26s} {r['mean_acceptance_length']:10.4f} {r['impact']:+9.4f}  "
              f"[{r['impact_ci95_lo']:+.4f}, {r['impact_ci95_hi']:+.4f}]")
    hot = next((r for r in rows if r["lm_head_vocab"] == "hot"), rows[0])
    print(f"hot vocabulary: {hot['hot_vocab_size_used']} of {hot['vocab_size']} tokens ({hot['hot_source'] or '-'}, "
          f"training-token coverage {hot['hot_corpus_coverage'] or '-'}, coverage of the target's outputs "
          f"{hot['target_output_hot_coverage'] or '-'}); greedy outputs == target-only: "
          f"{', '.join(sorted({str(r['greedy_equals_target']) for r in rows}))}; contract sha256 {c.sha256[:12]} -> {p}")
    out = Path(a.out).resolve()
    if not a.no_gate and out.name == "acceptance_impact.csv":
        from eagle4.gates import evaluate_all

        for g in evaluate_all(c, out.parent, hw="cpu", only=["approximation_acceptance_impact"]):
            print(g.line())
    return 0
