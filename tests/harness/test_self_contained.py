"""A clone needs nothing beside it: no code or test reads the reference bundle next to the checkout,
and every folder of project test data says where its files come from."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SCANNED = ("src", "tests", "scripts", "plugins", "docker", ".ci")
SCANNED_FILES = ("conftest.py", "tox.ini", "pyproject.toml")
_BUNDLE = "sha" + "red"  # spelled in two parts so this file does not match its own patterns
# ../shared, /work/shared, "shared" or 'shared' as a path component
FORBIDDEN = re.compile(rf"\.\./{_BUNDLE}\b|/work/{_BUNDLE}\b|[\"']{_BUNDLE}[\"']")
TEXT_SUFFIXES = {".py", ".sh", ".toml", ".ini", ".cfg", ".txt", ".yml", ".yaml", ".json", ".cpp", ".hpp", ".h",
                 ".tcl", ".md", ""}


def _files():
    for top in SCANNED:
        for p in sorted((REPO / top).rglob("*")):
            # pip's generated metadata (*.egg-info) is a copy of the README, not code or data the product reads
            if (p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
                    and not any(part.endswith(".egg-info") for part in p.parts)):
                yield p
    for name in SCANNED_FILES:
        if (REPO / name).is_file():
            yield REPO / name


def test_nothing_reads_the_bundle_beside_the_checkout():
    hits = []
    for p in _files():
        if p == Path(__file__).resolve():
            continue
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{p.relative_to(REPO)}:{n}: {line.strip()}")
    assert not hits, "reads outside the repository (copy the file into tests/data instead):\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_must():
    for line in (f'GOLDENS = REPO.parent / "{_BUNDLE}" / "goldens"', f"cat ../{_BUNDLE}/spec/KERNELS.md",
                 f"open('/work/{_BUNDLE}/hls-reports/x.xml')"):
        assert FORBIDDEN.search(line), line
    assert not FORBIDDEN.search(f"a {_BUNDLE} library")


def _note_for(folder: Path) -> Path | None:
    """The SOURCE.md (or a data set's README.md) of ``folder`` or of its nearest ancestor under tests/data."""
    while folder != DATA.parent:
        for name in ("SOURCE.md", "README.md"):
            if (folder / name).is_file():
                return folder / name
        folder = folder.parent
    return None


def test_every_data_file_has_a_source_note():
    files = [p for p in DATA.rglob("*") if p.is_file() and p.suffix != ".md" and "__pycache__" not in p.parts]
    assert files, f"{DATA} holds no test data"
    for f in files:
        note = _note_for(f.parent)
        assert note is not None, f"{f.relative_to(REPO)} has no SOURCE.md beside or above it (origin, format, licence)"


def test_copied_data_notes_state_origin_format_licence_and_name_each_file():
    for folder in (DATA / "goldens" / "cuda", DATA / "hls-reports", DATA / "spec"):
        note = folder / "SOURCE.md"
        text = note.read_text().lower()
        for word in ("origin", "format", "licence", "commit"):
            assert word in text, f"{note.relative_to(REPO)} does not state its {word}"
        for f in folder.iterdir():
            if f.is_file() and f.name != "SOURCE.md":
                assert f.name.lower() in text, f"{note.relative_to(REPO)} does not name {f.name}"


def test_the_real_goldens_and_reports_are_in_the_project():
    assert len(list((DATA / "goldens" / "cuda").glob("*.txt"))) == 3
    assert len([p for p in (DATA / "hls-reports").iterdir() if p.suffix in (".xml", ".rpt")]) == 8
