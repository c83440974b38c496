"""Our CUDA kernels (the cuda backend) against the PyTorch reference on every catalog case.

* Every case runs twice on the GPU; both runs must match the reference (EXACT bitwise, TOL where
  KERNELS.md says so) and each other bitwise (nondeterminism check).
* ``--kernel-src PATH`` (or EAGLE4_KERNEL_SRC) runs a user's own ``cost_draft_tree_kernel.cu``
  instead of ours.
* The user-source path itself is tested by a second build of our sources as one file (``single_source``, the
  drop-in a user makes) in another folder (a different build key), and by a source missing ops (the backend must
  name the absent ops).
* K5's narrow register build, which the launch rule takes only at >= 512 rows of V > 65536 (no catalog case is that
  large): 520 rows made of the largest K5 case's.
* The op's own refusals (a precondition, a shape check, a limit) raise a Python exception with their numbers in
  the message, in a process that lives on (a child process: a crash there fails the test, not the session).
Needs ``--hw=cuda`` (deselected otherwise); with --hw=cuda and no GPU or no nvcc it FAILS.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys

import numpy as np
import pytest

from eagle4.backends.cuda import OPS, CudaBackend, build_dir_root, single_source
from eagle4.cases.catalog import all_cases
from eagle4.parity import judge, reference_outcome, run_case, self_consistency
from eagle4.spec import KERNEL_ORDER


@functools.cache
def _backend(kernel_src: str | None) -> CudaBackend:
    backend = CudaBackend(kernel_src=kernel_src)
    backend.require()  # BackendUnavailable names what is missing (GPU, nvcc, build log, absent ops)
    return backend


def _cases():
    return [pytest.param(c, id=c.case_id) for c in all_cases()]


@pytest.mark.parity
@pytest.mark.cuda
@pytest.mark.parametrize("case", _cases())
def test_cuda_matches_reference(case, parity_record, pytestconfig):
    try:
        backend = _backend(pytestconfig.getoption("--kernel-src"))
    except Exception as e:
        parity_record(case.kernel, case.case_id, "cuda", "fail", f"backend unavailable: {e}")
        pytest.fail(f"cuda backend cannot run: {e}", pytrace=False)
    expected = reference_outcome(case)
    first = run_case(backend, case)
    second = run_case(backend, case)
    verdict = judge(case, expected, first)
    repeat = self_consistency(case, first, second)
    ok = verdict.ok and repeat.ok
    detail = "\n".join(x for x in (verdict.report if not verdict.ok else "", repeat.report) if x)
    parity_record(case.kernel, case.case_id, "cuda", "pass" if ok else "fail", detail)
    assert verdict.ok, verdict.report
    assert repeat.ok, repeat.report


def _one_case_per_kernel():
    seen, out = set(), []
    for c in all_cases(include_large=False):
        if c.kernel not in seen:
            seen.add(c.kernel)
            out.append(c)
    return out


@pytest.mark.parity
@pytest.mark.cuda
def test_user_kernel_src_second_build():
    """A user's one-file source loaded by path: our sources as one file elsewhere build separately and match.

    The file lives at a fixed place under the build cache, so a repeated run reuses its build.
    """
    src = build_dir_root() / "user_src_copy" / "cost_draft_tree_kernel.cu"
    src.parent.mkdir(parents=True, exist_ok=True)
    text = single_source()
    if not src.is_file() or src.read_text() != text:
        src.write_text(text)
    user = CudaBackend(kernel_src=src)
    ok, why = user.available()
    assert ok, why
    assert user.missing_ops() == []
    ours = _backend(None)
    assert user._mod is not ours._mod, "a different path must give a separate build"
    cases = _one_case_per_kernel()
    assert {c.kernel for c in cases} == set(KERNEL_ORDER)
    for case in cases:
        verdict = judge(case, reference_outcome(case), run_case(user, case))
        assert verdict.ok, verdict.report


# K6's refusals, each with numbers in its message: a number formatted through std::ostream inside the extension
# killed the process (reports/kernel_before_after/refusal_crash/). Zero inputs, refused before any launch; the
# raw op, so no Python-side validation comes first.
_K6_REFUSALS = r"""
import sys, torch
from eagle4.backends.cuda import CudaBackend
b = CudaBackend(kernel_src=sys.argv[1] or None)
b.require()
mod, dev = b._mod, torch.device("cuda", 0)
def k6(B, Q, V, S=4, cand_q=None):
    z = lambda dt, *s: torch.zeros(*s, dtype=dt, device=dev)
    L, F, I = torch.long, torch.float32, torch.int32
    return (z(L, B, cand_q or Q), z(L, B, Q), z(L, B, Q), z(L, B, Q), z(F, B, Q, V), z(L, B, Q), z(torch.uint8, B),
            z(F, B, Q), z(F, B), 1.0, 1.0, B, Q, S, V, z(I, B * Q), z(I, B, S), z(I, B))
for name, args in [("precondition B = 0", k6(0, 4, 4)),
                   ("candidates of 3 columns for Q = 4", k6(1, 4, 4, cand_q=3)),
                   ("Q = 4096", k6(1, 4096, 4))]:
    try:
        mod.draft_tree_reject_sample(*args)
        torch.cuda.synchronize()
        print(name, "| ran", flush=True)
    except Exception as e:
        print(name, "|", type(e).__name__, "|", str(e).splitlines()[0], flush=True)
print("alive", flush=True)
"""
_K6_REFUSED = [("ValueError", "precondition: B must be >= 1, got 0"),
               ("ValueError", "candidates dimension 1 must be 4, got shape [1, 3]"),
               ("RuntimeError", "Q/V too large for shared memory")]


@pytest.mark.parity
@pytest.mark.cuda
def test_cuda_reject_sample_refusals_raise(pytestconfig):
    """Arguments or shapes K6 refuses raise ValueError / RuntimeError with the numbers in the message, and the
    process goes on."""
    src = pytestconfig.getoption("--kernel-src")
    _backend(src)  # built here (its failure is this test's), loaded from the build cache by the child
    try:
        r = subprocess.run([sys.executable, "-c", _K6_REFUSALS, str(src or "")], capture_output=True,
                           text=True, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail("the refusal calls did not finish in 600 s", pytrace=False)
    log = f"exit {r.returncode}\n{r.stdout}{r.stderr[-3000:]}"
    assert r.returncode == 0 and r.stdout.rstrip().endswith("alive"), log
    rows = [line.split(" | ") for line in r.stdout.splitlines() if " | " in line]
    assert len(rows) == len(_K6_REFUSED), log
    for row, (kind, want) in zip(rows, _K6_REFUSED, strict=True):
        assert row[1] == kind and want in row[-1], f"{row[0]}: expected {kind} saying '{want}'\n{log}"


@pytest.mark.parity
@pytest.mark.cuda
def test_cuda_logits_to_probas_narrow_build(pytestconfig):
    """K5 at 520 rows of V = 128256 (the launch rule's narrow register build: 64-thread blocks of 32 vectors)
    matches the reference; its first 40 rows, the largest catalog case's, differ in bits from that case's probas
    (the other register build: the parts a thread sums are 4x larger), so the launch reached the narrow build."""
    backend = _backend(pytestconfig.getoption("--kernel-src"))
    big = next(c for c in all_cases() if c.case_id == "logits_to_probas/large/V128256_rows40_ties_nan")
    many = dataclasses.replace(big, case_id="logits_to_probas/large/V128256_rows520_narrow", inputs={
        "logits": np.tile(big.inputs["logits"], (13, 1)), "temperatures": np.tile(big.inputs["temperatures"], 13)})
    got = run_case(backend, many)
    verdict = judge(many, reference_outcome(many), got)
    assert verdict.ok, verdict.report
    other = run_case(backend, big).outputs["probas"]
    assert got.outputs["probas"][:40].tobytes() != other.tobytes(), "520 rows took the 40-row case's build"


@pytest.mark.cpu
def test_missing_ops_are_named(tmp_path, monkeypatch):
    """A source lacking ops: available() is False and names every absent op (no GPU needed)."""
    import types

    import torch

    import eagle4.backends.cuda as cu

    src = tmp_path / "cost_draft_tree_kernel.cu"
    src.write_text("// only two ops\n")
    fake = types.SimpleNamespace(**{OPS[0]: lambda *a: None, OPS[4]: lambda *a: None})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "cuda", torch.version.cuda or "13.0")
    monkeypatch.setattr(cu, "_which_nvcc", lambda: "/usr/bin/nvcc")
    monkeypatch.setattr(cu, "load_extension", lambda path, verbose=False: fake)
    b = CudaBackend(kernel_src=src)
    ok, why = b.available()
    assert not ok
    for op in OPS:
        if op in (OPS[0], OPS[4]):
            assert op not in why.split("define the op(s)")[1]
        else:
            assert op in why
    assert str(src) in why


@pytest.mark.cpu
def test_unavailable_says_why_without_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    ok, why = CudaBackend().available()
    assert not ok and "no NVIDIA GPU" in why


@pytest.mark.cpu
def test_our_sources_are_one_a_kernel_without_hooks():
    """cuda/ holds one source per spec key plus the draft step and the module, none over 900 lines, and binds no
    underscore hook and defines no g_-prefixed global (the production build has one form per launch rule)."""
    import re

    from eagle4.backends.cuda import DEFAULT_SRC, kernel_sources, source_files
    from eagle4.spec import KERNELS

    assert {f.name for f in kernel_sources(DEFAULT_SRC)} == {f"{k}.cu" for k in KERNELS} | {"draft_step.cu",
                                                                                         "module.cu"}
    for f in source_files(DEFAULT_SRC):
        text = f.read_text()
        assert len(text.splitlines()) <= 900, f.name
        assert not re.search(r'm\.def\("_', text), f"{f.name} binds an underscore hook"
        assert not re.search(r"\bg_\w+\s*(\[[^\]]*\])?\s*(=|;)", text), f"{f.name} defines a g_ global"


@pytest.mark.cpu
def test_single_source_is_our_folder_as_one_file():
    """single_source(): every kernel of cuda/ in one text with the folder's headers inlined once, so that it builds
    as one translation unit (the GPU test builds it as a user's drop-in)."""
    from eagle4.backends.cuda import DEFAULT_SRC, single_source
    from eagle4.perf.ncu import kernel_names, source_text

    text = single_source()
    assert '#include "' not in text and "#pragma once" not in text
    assert kernel_names(text) == kernel_names(source_text(DEFAULT_SRC))
    assert text.count("inline thread_local bool check_only") == 1  # the shared header once
    assert text.count("PYBIND11_MODULE(") == 1


@pytest.mark.cpu
def test_build_key_and_digest_cover_the_headers(tmp_path):
    """Editing a header of a folder source changes its build key and its digest (a stale build is never reused)."""
    from eagle4.backends.cuda import DEFAULT_SRC, build_key, source_digest

    src = tmp_path / "cuda"
    src.mkdir()
    for f in DEFAULT_SRC.iterdir():
        if f.suffix in (".cu", ".cuh"):
            (src / f.name).write_bytes(f.read_bytes())
    key, digest = build_key(src), source_digest(src)
    header = src / "eagle4_cuda.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    assert build_key(src) != key and source_digest(src) != digest
    one = src / "module.cu"
    assert len(source_digest(one)) == 64 and build_key(one) != build_key(src)
