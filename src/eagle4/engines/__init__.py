"""Engine benchmark results (GPU speculative-decoding programs) as provenance-carrying rows.

``import_results(dir) -> list[EngineRow]`` reads the speculative benchmark JSON (TurboMind /
LMDeploy ``benchmark_speculative.py``), vLLM's serving benchmark JSON and sglang ``bench_serving``
JSONL; each row keeps engine, version, device, scenario, commit and the file's sha256. Malformed
files raise :class:`ResultFormatError` with one line naming the file and the field.
"""

from eagle4.engines.importer import import_file, import_results
from eagle4.engines.rows import EngineRow, ResultFormatError

__all__ = ["EngineRow", "ResultFormatError", "import_file", "import_results"]
