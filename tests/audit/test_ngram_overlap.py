"""The corpus overlap search against lm-eval's own decontamination code (its Janitor's normalisation and
word_ngrams, imported from the installed lm-eval) on the same texts, over real text, JSON Lines, gzip and
Parquet files; bad corpus files are one line naming the file, line and field."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from task_files import CHOICE, task_file

from rueval.audit import corpus_files
from rueval.audit.ngram_overlap import NGRAM, UNICODE_SPACES, corpus_overlap, words
from rueval.core.errors import DataError, RuevalError
from rueval.results.contamination import ContaminationResult, read_item_scores

janitor = pytest.importorskip("lm_eval.decontamination.janitor")
WORDS = "Кошка кот Москва дом река солнце лес поле небо город Мир ветер ночь день школа книга".split()
SPACES = [" ", "  ", "\n", "\t", "\xa0", "\u3000", "\x1c", " — ", ", ", "! "]


def lm_eval_ngrams(text: str) -> set[str]:
    """lm-eval's 13-grams of a text: its Janitor's normalisation, then its word_ngrams."""
    return set(janitor.word_ngrams(janitor.Janitor().normalize_string(text), NGRAM))


def lm_eval_overlap(items: list[str], documents: list[str]) -> list[tuple[bool, float | None]]:
    """Per item, lm-eval's flag (any 13-gram in a document's 13-grams) and the share of its 13-grams found."""
    corpus = set().union(*map(lm_eval_ngrams, documents))
    result = []
    for item in items:
        ngrams = lm_eval_ngrams(item)
        found = len(ngrams & corpus)
        result.append((found > 0, found / len(ngrams) if ngrams else None))
    return result


def random_text(rng: random.Random, n: int) -> str:
    """Words with ASCII and Russian capitals, punctuation and every kind of whitespace between them."""
    parts = []
    for _ in range(n):
        word = rng.choice(WORDS)
        word = word.upper() if rng.random() < 0.1 else word
        parts.append(word + rng.choice(["", "", ".", ",", "«", "»", "ABC", "x-y"]) + rng.choice(SPACES))
    return "".join(parts)


def study(seed: int = 0) -> tuple[list[str], list[str]]:
    """Items, and corpus documents holding some of them whole, some in part, some changed in case and
    punctuation only (which lm-eval's normalisation ignores), some in Russian capitals (which it does not)."""
    rng = random.Random(seed)
    items = [random_text(rng, rng.choice([5, 20, 40, 80])) for _ in range(40)]
    documents = [random_text(rng, 300) for _ in range(30)]
    for i, item in enumerate(items[:24]):
        piece = item if i % 3 else item[len(item) // 2 :]
        piece = piece.replace(".", "!") if i % 4 == 0 else piece.upper() if i % 4 == 1 else piece
        doc = rng.randrange(len(documents))
        documents[doc] = documents[doc] + " " + piece + " " + random_text(rng, 10)
    return items, documents


def ours(result) -> list[tuple[bool, float | None]]:
    return [(item.flagged, item.share) for item in result.items]


def test_words_are_lm_eval_s_normalised_words():
    text = "Hello, WORLD! Привет,\xa0Мир…\u3000«Ёлка»\x1cend.\u2003x\u205fy\x85z A-B"
    assert [w.decode() for w in words(text.encode())] == janitor.Janitor().normalize_string(text).split()
    beyond_ascii = {ch for ch in map(chr, range(0x80, 0x110000)) if ch.isspace()}
    assert set(UNICODE_SPACES) == {ch.encode() for ch in beyond_ascii}  # str.split's whitespace, all of it
    rng = random.Random(0)
    alphabet = [*beyond_ascii, *"\x1c\x1f \t\n.,!«»—…“”ЁёAaZz", *map(chr, range(0x2010, 0x2030)), "\u3001", "\u1681"]
    for _ in range(200):  # every space among the characters that share its first bytes
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        assert [w.decode() for w in words(text.encode())] == janitor.Janitor().normalize_string(text).split()


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz", "parquet", "txt"])
def test_every_format_flags_what_lm_eval_s_decontamination_flags(tmp_path, kind, monkeypatch):
    monkeypatch.setattr(corpus_files, "CHUNK_BYTES", 997)  # many pieces: n-grams across their cuts
    items, documents = study()
    expected = lm_eval_overlap(items, documents)
    assert 5 < sum(flag for flag, _ in expected) < len(items)  # a study with both answers
    assert any(share is not None and 0 < share < 1 for _, share in expected)  # and partial overlap
    write_corpus(tmp_path, kind, documents)
    result = corpus_overlap(items, tmp_path)
    assert ours(result) == expected
    assert result.documents == len(documents)
    assert result.summary()["flagged"] == sum(flag for flag, _ in expected)


def write_corpus(folder, kind, documents):
    if kind == "txt":
        for i, document in enumerate(documents):
            (folder / f"doc{i:02d}.txt").write_text(document, encoding="utf-8")
        return
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({"id": list(range(len(documents))), "text": documents})
        pq.write_table(table, folder / "corpus.parquet", row_group_size=7)
        return
    lines = "".join(json.dumps({"text": document, "meta": 1}, ensure_ascii=False) + "\n" for document in documents)
    if kind == "jsonl.gz":
        (folder / "corpus.jsonl.gz").write_bytes(gzip.compress(lines.encode()))
    else:
        (folder / "corpus.jsonl").write_text(lines, encoding="utf-8")


def test_no_n_gram_spans_two_documents_and_several_fields_are_each_a_document(tmp_path):
    item = " ".join(WORDS[:13])
    first, second = " ".join(WORDS[:6]), " ".join(WORDS[6:13])
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"a": first}) + "\n" + json.dumps({"a": second}) + "\n", encoding="utf-8")
    assert not corpus_overlap([item], corpus, fields=("a",)).items[0].flagged
    corpus.write_text(json.dumps({"a": first, "b": second}) + "\n", encoding="utf-8")
    assert not corpus_overlap([item], corpus, fields=("a", "b")).items[0].flagged
    corpus.write_text(json.dumps({"a": first + " " + second, "b": None}) + "\n", encoding="utf-8")
    assert corpus_overlap([item], corpus, fields=("a", "b")).items[0].to_json() == {
        "flagged": True, "share": 1.0, "ngrams": 1, "found": 1,
    }  # fmt: skip


def test_a_text_file_is_one_document_across_its_lines_and_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_files, "CHUNK_BYTES", 16)
    item = " ".join(WORDS[:14])
    (tmp_path / "book.txt").write_text("\ufeff" + "\n".join(WORDS[:14]) + "\n", encoding="utf-8")
    result = corpus_overlap([item, "short"], tmp_path / "book.txt")
    assert [i.to_json() for i in result.items] == [
        {"flagged": True, "share": 1.0, "ngrams": 2, "found": 2},
        {"flagged": False, "share": None, "ngrams": 0, "found": 0},
    ]


def test_bad_corpus_files_are_one_line_naming_file_line_and_field(tmp_path):
    item = [" ".join(WORDS)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n{"text": "b"\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{bad}:2: malformed JSON \("):
        corpus_overlap(item, bad)
    bad.write_text('{"text": "a"}\n\n{"content": "b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{bad}:3: field 'text': missing"):
        corpus_overlap(item, bad)
    bad.write_text('{"text": 5}\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{bad}:1: field 'text': expected text, got int$"):
        corpus_overlap(item, bad)
    bad.write_text('{"text": "a", "text": "b"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{bad}:1: field 'text': given twice in one object$"):
        corpus_overlap(item, bad)
    bad.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"^{bad}:1: expected a JSON object, got list$"):
        corpus_overlap(item, bad)
    text = tmp_path / "latin1.txt"
    text.write_bytes("строка\nещё\n".encode() + "caf\xe9".encode("latin-1"))
    with pytest.raises(DataError, match=rf"^{text}:3: not UTF-8 text$"):
        corpus_overlap(item, text)
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"text": "a"}\n' * 100)[:30])
    with pytest.raises(DataError, match=rf"^{broken}: "):
        corpus_overlap(item, broken)


def test_bad_parquet_columns_and_paths(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    item = [" ".join(WORDS)]
    file = tmp_path / "c.parquet"
    pq.write_table(pa.table({"content": ["a"], "n": [1]}), file)
    with pytest.raises(DataError, match=rf"^{file}: field 'text': no such column \(the file's columns: content, n\)$"):
        corpus_overlap(item, file)
    with pytest.raises(DataError, match=rf"^{file}: field 'n': expected a text column, got int64$"):
        corpus_overlap(item, file, fields=("n",))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"junk.parquet: not a readable Parquet file"):
        corpus_overlap(item, tmp_path / "junk.parquet")
    with pytest.raises(DataError, match=r"notes.md: not a corpus file"):
        (tmp_path / "notes.md").write_text("x")
        corpus_overlap(item, tmp_path / "notes.md")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuevalError, match=r"empty: no corpus files in the folder"):
        corpus_overlap(item, tmp_path / "empty")


def test_task_files_are_audited_and_searched_by_their_decontamination_query(cli, tiny_gpt2_dir, tmp_path):
    """`rueval contamination` on lm-eval task files: each evaluation document scored against its perturbed twin,
    and the corpus searched by the task's doc_to_decontamination_query (a field, a template, or doc_to_text
    when it declares none), flagged as lm-eval's own Janitor flags the same queries."""
    records = [{"text": f"{' '.join(WORDS[i : i + 13])} отзыв {i}", "topic": " ".join(WORDS[i:])} for i in range(3)]
    body = 'output_type: generate_until\ndoc_to_text: "Тема: {{topic}}"\ndoc_to_target: "x"\n'
    body += "generation_kwargs: {until: ['\\n']}\nmetric_list:\n  - metric: exact_match\n"
    task_file(tmp_path, "by_field", body + "should_decontaminate: true\ndoc_to_decontamination_query: text\n", records)
    task_file(tmp_path, "by_template", body + 'doc_to_decontamination_query: "Отзыв: {{text}}"\n', records)
    task_file(tmp_path, "by_prompt", body, records)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(f"... {records[1]['text']} ...", encoding="utf-8")
    out = tmp_path / "out"
    names = "by_field,by_template,by_prompt"
    result = cli(
        "contamination",
        "-m",
        f"hf:{tiny_gpt2_dir}",
        "-t",
        names,
        "--include-path",
        tmp_path,
        "--corpus",
        corpus,
        "-o",
        out,
        "-q",
    )
    assert result.exit_code == 0, result.output
    queries = {
        "by_field": [record["text"] for record in records],
        "by_template": [f"Отзыв: {record['text']}" for record in records],
        "by_prompt": [f"Тема: {record['topic']}" for record in records],
    }
    summary = ContaminationResult.read(out)
    for name, texts in queries.items():
        rows = read_item_scores(out, name)
        expected = lm_eval_overlap(texts, [corpus.read_text(encoding="utf-8")])
        assert [row.idx for row in rows] == ["0", "1", "2"]  # lm-eval's doc_id
        assert [(row.ngram_overlap or 0.0) > 0 for row in rows] == [flag for flag, _ in expected], name
        assert [row.ngram_overlap for row in rows] == [share for _, share in expected], name
        assert all(row.min_k is not None for row in rows) and any(row.perturbation is not None for row in rows)
        assert summary.tasks[name].split == "test" and summary.tasks[name].reference.startswith("perturbed twins")
    assert summary.tasks["by_field"].corpus["flagged"] == 1


def test_options_of_rueval_s_own_tasks_are_refused_for_task_files_in_one_line(cli, tiny_gpt2_dir, tmp_path):
    task_file(tmp_path, "reviews", CHOICE)
    for option in (["--guessing"], ["--split", "val"], ["--reference-split", "val"]):
        result = cli("contamination", "-m", f"hf:{tiny_gpt2_dir}", "-t", "reviews", "--include-path", tmp_path, *option)
        assert result.exit_code == 2 and result.output.startswith(f"error: {option[0]}: for rueval's own tasks")
        assert len(result.output.strip().splitlines()) == 1, result.output  # before the model is loaded
