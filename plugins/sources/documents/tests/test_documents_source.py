"""The documents source: PDF pages, unreadable files counted not fatal, chunk budgets, overlap,
boundaries and positions (property-tested), and a real `bashgym run` to Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bashgym_sources_documents.chunking import TOKEN_RE, chunk_text, count_tokens
from bashgym_sources_documents.source import DocumentsOptions, DocumentsSource
from bashgym_testing.paths import options_with_path_gone
from hypothesis import given, settings
from hypothesis import strategies as st

from bashgym.contracts import RunContext
from bashgym.settings import Settings


def make_pdf(pages: list[list[str]]) -> bytes:
    """A valid PDF 1.4 whose page i shows the lines of pages[i] (Helvetica text objects, which
    pypdf extracts); written by hand because no PDF-writing library is a dependency."""

    def esc(line: str) -> str:
        return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objs = {
        1: "<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>",
        3: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for i, lines in enumerate(pages):
        stream = "BT /F1 11 Tf 72 740 Td 14 TL " + " ".join(f"({esc(x)}) Tj T*" for x in lines)
        stream += " ET"
        objs[4 + 2 * i] = (
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>"
        )
        objs[5 + 2 * i] = f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream"
    out, offsets = "%PDF-1.4\n", {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += f"{num} 0 obj\n{objs[num]}\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n"
    out += "".join(f"{offsets[k]:010d} 00000 n \n" for k in sorted(objs))
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return out.encode("latin-1")


EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "documents"
PDF_PAGES = [
    ["Release notes", "The parser now handles empty input."],
    ["Known issues", "Large files are read in one piece."],
    ["Appendix", "Benchmarks were run on one machine."],
]


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path / "run", settings=Settings())


def read(run, path, **options):
    return DocumentsSource().open(DocumentsOptions(path=str(path), **options), run)


def test_pdf_text_comes_out_with_page_numbers(run, tmp_path):
    (tmp_path / "notes.pdf").write_bytes(make_pdf(PDF_PAGES))
    whole = read(run, tmp_path / "notes.pdf")
    assert len(whole) == 1 and whole.loc[0, "doc_type"] == "pdf"
    assert (whole.loc[0, "page"], whole.loc[0, "end_page"]) == (1, 3)
    for lines in PDF_PAGES:
        for line in lines:
            assert line in whole.loc[0, "text"]
    small = read(run, tmp_path / "notes.pdf", chunk_tokens=16, overlap_tokens=0)
    by_page = {}
    for row in small.itertuples():
        by_page.setdefault(row.page, []).append(row.text)
        assert row.page <= row.end_page
    assert set(by_page) == {1, 2, 3}
    assert "Release notes" in by_page[1][0] and "Appendix" in by_page[3][0]
    assert small["path"].tolist() == ["notes.pdf"] * len(small)
    assert run.counts["source.files"] == 2


def test_unreadable_files_are_counted_and_noted_not_fatal(run, tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=100, height=100)
    writer.encrypt("hunter2")
    with open(tmp_path / "locked.pdf", "wb") as fh:
        writer.write(fh)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf at all\n%%EOF\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "good.md").write_text("# Fine\n\nThis one reads.\n")
    (tmp_path / "huge.txt").write_text("word " * 5000)
    rows = read(run, tmp_path, max_file_bytes=10_000)
    assert rows["path"].tolist() == ["good.md"]
    assert run.counts["source.unreadable"] == 4 and run.counts["source.too_large"] == 1
    notes = "\n".join(run.notes)
    for name, why in [
        ("locked.pdf", "encrypted"),
        ("broken.pdf", "PDF"),
        ("latin1.txt", "not UTF-8"),
        ("blob.py", "binary"),
        ("huge.txt", "over 10000 bytes"),
    ]:
        assert any(name in n and why in n for n in run.notes), (name, notes)


def test_markdown_chunks_start_at_headings(run, tmp_path):
    sections = [
        f"## Section {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(30)) + ".\n"
        for i in range(6)
    ]
    (tmp_path / "guide.md").write_text("# Guide\n\n" + "\n".join(sections))
    rows = read(run, tmp_path / "guide.md", chunk_tokens=80, overlap_tokens=0)
    assert (rows["num_tokens"] <= 80).all()
    starts = [t.split("\n", 1)[0] for t in rows["text"]]
    assert all(s.startswith("#") for s in starts), starts
    assert rows["chunk_index"].tolist() == list(range(len(rows)))


CODE = '''import os


@decorated
def first(a, b):
    """Add."""
    return a + b


class Second:
    def method(self):
        return os.getcwd()


def third():
    values = [1, 2, 3]
    return sum(values)
'''


def test_code_chunks_cut_before_top_level_definitions(run, tmp_path):
    (tmp_path / "mod.py").write_text(CODE)
    rows = read(run, tmp_path / "mod.py", chunk_tokens=30, overlap_tokens=0)
    texts = rows["text"].tolist()
    assert [t.split("\n", 1)[0] for t in texts] == ["import os", "class Second:", "def third():"]
    assert "@decorated\ndef first" in texts[0]  # the decorator stays with its def
    assert set(rows["language"]) == {"python"} and set(rows["doc_type"]) == {"code"}
    lines = CODE.split("\n")
    for row in rows.itertuples():
        assert lines[row.start_line - 1].strip().startswith(row.text.split("\n")[0].strip())


def test_folder_walk_skips_hidden_vendored_and_unknown_files(run, tmp_path):
    for name in [".git/config.md", "node_modules/x/readme.md", ".env.txt", "pic.png", "a/b.rs"]:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("fn main() {}\n")
    assert read(run, tmp_path)["path"].tolist() == ["a/b.rs"]
    assert read(run, tmp_path / "a" / "*.rs")["path"].tolist() == ["b.rs"]


def test_bad_options_and_missing_input_are_clear_errors(run, tmp_path):
    from bashgym.contracts import InputError

    with pytest.raises(ValueError, match="overlap_tokens must be smaller"):
        DocumentsOptions(path=str(tmp_path), chunk_tokens=32, overlap_tokens=32)
    with pytest.raises(ValueError, match="path\n  does not exist"):
        DocumentsOptions(path=str(tmp_path / "nothing-here"))  # before a run folder exists
    with pytest.raises(ValueError, match="nothing matches this glob"):
        DocumentsOptions(path=str(tmp_path / "nothing-here" / "*.md"))
    options = options_with_path_gone(DocumentsOptions, tmp_path / "gone")
    with pytest.raises(InputError, match="no readable documents"):
        DocumentsSource().open(options, run)


LINE = st.one_of(
    st.just(""),
    st.builds(lambda w: "# " + w, st.text("abc xyz", min_size=1, max_size=20)),
    st.builds(lambda w: "def f():" + w, st.text("ab ()=:", max_size=10)),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=120),
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(LINE, max_size=60),
    budget=st.integers(16, 120),
    overlap_share=st.floats(0, 0.5),
    doc_type=st.sampled_from(["markdown", "code", "text"]),
)
def test_chunks_fit_the_budget_overlap_and_cover_everything(lines, budget, overlap_share, doc_type):
    text = "\n".join(lines)
    overlap = int(budget * overlap_share)
    chunks = list(chunk_text(text, budget, overlap, doc_type))
    tokens = [m.group() for m in TOKEN_RE.finditer(text)]
    rebuilt: list[str] = []
    for i, chunk in enumerate(chunks):
        assert chunk.text == text[chunk.start_char : chunk.end_char]
        assert chunk.num_tokens == count_tokens(chunk.text) <= budget
        assert chunk.start_line == text.count("\n", 0, chunk.start_char) + 1
        assert chunk.end_line == text.count("\n", 0, chunk.end_char - 1) + 1
        own = [m.group() for m in TOKEN_RE.finditer(chunk.text)]
        if i:
            assert own[:overlap] == rebuilt[-overlap:] if overlap else True
            own = own[overlap:]
        rebuilt.extend(own)
    assert rebuilt == tokens  # every token, in order, exactly once once overlaps are removed


def test_run_documents_to_parquet(bashgym_cli, bashgym_env):
    import shutil

    docs = bashgym_env.workdir / "docs"
    shutil.copytree(EXAMPLES, docs)
    out = bashgym_env.workdir / "out"
    result = bashgym_cli(
        "run",
        "--source",
        "documents",
        "--set",
        f"source.path={docs}",
        "--set",
        "source.chunk_tokens=128",
        "--set",
        "source.overlap_tokens=16",
        "--sink",
        "parquet",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert set(table["doc_type"]) >= {"markdown", "code", "pdf"}
    assert (table["num_tokens"] <= 128).all()
    assert not table["path"].str.startswith("/").any()
    pdf = table[table["doc_type"] == "pdf"]
    assert pdf["page"].min() == 1 and pdf["end_page"].max() >= 2
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["source_rows"] == len(table) and counts["source.files"] >= 4


def test_a_home_relative_path_is_read_as_every_file_source_reads_it(run, tmp_path, monkeypatch):
    """`~/notes` names the user's folder here too (it was taken literally: the options, which
    expand `~` to check the path is there, accepted what open() then found no document in)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    notes = tmp_path / "home" / "notes"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nsome text\n")
    assert read(run, "~/notes")["path"].tolist() == ["a.md"]
    assert read(run, "~/notes/*.md")["path"].tolist() == ["a.md"]
