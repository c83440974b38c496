"""A/B: the previous commit's step at every batch, by its own self-check's timing(), in this call."""
import json, sys, time
from pathlib import Path
old = Path(__file__).resolve().parent / "old"
sys.path.insert(0, str(old / "scripts"))
import torch  # noqa: E402
import gpu_selfcheck_e2e as s  # noqa: E402  (puts old/src first on sys.path)
import eagle4  # noqa: E402
assert str(old) in eagle4.__file__, eagle4.__file__
out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "commit": "87db7b1", "src": eagle4.__file__}
t = time.time()
s.timing(out, [1, 8, 32, 128])
out["wall_s"] = time.time() - t
Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
