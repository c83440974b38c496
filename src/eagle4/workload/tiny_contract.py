"""A tiny variant of a dummy-load contract (same sections and rules, toy dimensions): what the CPU
tests and the GPU self-check run through the same engine code as the deployment shape."""

from __future__ import annotations

from pathlib import Path

TINY = {"hidden_size": 64, "num_layers": 4, "num_heads": 4, "num_kv_heads": 2, "intermediate_size": 128,
        "vocab_size": 512, "fc_layers": "[0, 1, 3]", "hot_vocab_size": 128, "node_top_k": 4, "tree_depth": 5,
        "verify_num": 16, "max_tree_width": 4, "max_node_count": 80, "max_verify_num": 16, "max_input_size": 16,
        "prompt_tokens": 32, "output_tokens": 16, "min_duration_s": 1.0}


def tiny_contract_text(src: str | Path, dtype: str = "float32", **over) -> str:
    """``src``'s text with every TINY key's value replaced (one line per key, comments kept)."""
    want = {**TINY, "dtype": f'"{dtype}"', **over}
    out = []
    for line in Path(src).read_text().splitlines():
        key = line.split("=")[0].strip()
        if "=" in line and key in want and not line.startswith("#"):
            comment = line[line.index("#"):] if "#" in line else ""
            line = f"{key} = {want[key]}" + (f"  {comment}" if comment else "")
        out.append(line)
    return "\n".join(out) + "\n"


def write_tiny_contract(root: Path, src: Path, dtype: str = "float32", **over) -> Path:
    """Write the tiny contract under ``root`` (with the trace it names) and return its path."""
    import shutil

    (root / "contracts").mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").touch()
    repo = src.resolve().parents[1]
    trace = Path("data/traces/embedded-pair-accept-lengths.csv")
    (root / trace).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(repo / trace, root / trace)
    p = root / "contracts" / "tiny.toml"
    from eagle4.report import atomic

    atomic.write_text(p, tiny_contract_text(src, dtype, **over))
    return p
