"""`rueval contamination` end to end on the tiny GPT-2: the issue's contamination check (a model trained on half of
a task's test items tells them from the other half by Min-K%++, an untrained twin does not), the outputs and
their checked JSON, and the refusals."""

from __future__ import annotations

import json
import shutil

import pytest
from support import read_jsonl

from rueval.results.contamination import EVIDENCE, VERDICTS, ContaminationResult, read_item_scores

TASK = "terra"  # 20 test items in the bundled samples, 38-68 tokens each: the trainer's 128 take them whole
TARGET_LOSS = 0.1


def member_ids_and_texts() -> tuple[list[str], list[str]]:
    """Every other test item of TASK (ids and texts as the audit reads them): the members."""
    from rueval.audit.contamination import item_text
    from rueval.data import eval_split, open_data
    from rueval.tasks import get_task

    task = get_task(TASK)
    examples = eval_split(open_data(None), task, None, None, predict_only=True).examples[::2]
    return [e.key for e in examples], [item_text(task, e, "fields") for e in examples]


def mean_loss(folder, texts: list[str]) -> float:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model, tokenizer = AutoModelForCausalLM.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        losses = [model(**(b := tokenizer(t + tokenizer.eos_token, return_tensors="pt")), labels=b["input_ids"]).loss
                  for t in texts]  # fmt: skip
    return float(sum(losses) / len(losses))


@pytest.fixture(scope="module")
def members_model(tiny_gpt2_dir, tmp_path_factory):
    """The tiny GPT-2 trained on the members as raw text until its loss on them is near TARGET_LOSS."""
    from rueval.models.backends.tiny import train_tiny_model

    ids, texts = member_ids_and_texts()
    folder = shutil.copytree(tiny_gpt2_dir, tmp_path_factory.mktemp("members") / "model")
    for round_ in range(10):
        train_tiny_model(folder, texts, steps=20, seed=round_)
        if (loss := mean_loss(folder, texts)) <= TARGET_LOSS:
            break
    assert loss <= TARGET_LOSS
    members = tmp_path_factory.mktemp("ids") / "members.txt"
    members.write_text("\n".join(ids) + "\n", encoding="utf-8")
    return folder, members


def audit(cli, model, out, *options):
    result = cli("contamination", "-m", f"hf:{model}", "-t", TASK, "-o", out, "-q", *options)
    assert result.exit_code == 0, result.output
    return ContaminationResult.read(out)


def auroc(result: ContaminationResult, score: str) -> float:
    return next(found.auroc for found in result.tasks[TASK].membership if found.score == score)


def test_min_k_pp_tells_members_from_the_other_half(cli, members_model, tiny_gpt2_dir, tmp_path):
    model, members = members_model
    trained = audit(cli, model, tmp_path / "trained", "--members", members)
    untrained = audit(cli, tiny_gpt2_dir, tmp_path / "untrained", "--members", members)
    assert auroc(trained, "min_k_pp") >= 0.9
    assert auroc(trained, "min_k_pp") > auroc(untrained, "min_k_pp")
    rows = read_item_scores(tmp_path / "trained", TASK)
    assert len(rows) == 20 and all(row.min_k_pp is not None and row.ngram_overlap is None for row in rows)
    lines = read_jsonl(tmp_path / "trained" / "contamination" / f"{TASK}.jsonl")
    assert set(lines[0]) <= {"idx", "min_k", "min_k_pp", "zlib", "ppl", "perturbation"}  # no overlap: not computed


def test_trained_items_against_an_unseen_split_are_evidence(cli, members_model, tmp_path):
    model, _ = members_model
    found = audit(cli, model, tmp_path / "out", "--reference-split", "train").tasks[TASK]
    assert found.reference == "split train" and found.primary == "min_k_pp"
    assert found.verdict == EVIDENCE
    assert next(t for t in found.tests if t.score == "min_k_pp").p_value < 0.05


def test_outputs_and_prompt_text(cli, tiny_gpt2_dir, tmp_path):
    result = audit(cli, tiny_gpt2_dir, tmp_path, "--text", "prompt")
    task = result.tasks[TASK]
    assert result.text == "prompt" and task.items == 20 and task.reference.startswith("perturbed twins")
    assert task.verdict in VERDICTS and {t.score for t in task.tests} >= {"min_k", "min_k_pp", "zlib", "ppl"}
    assert ContaminationResult.from_json(json.loads(json.dumps(result.to_json())), _checker()) == result


def test_a_damaged_summary_names_its_field(cli, tiny_gpt2_dir, tmp_path):
    from rueval.core.errors import DataError

    audit(cli, tiny_gpt2_dir, tmp_path)
    summary = json.loads((tmp_path / "contamination.json").read_text(encoding="utf-8"))
    summary["tasks"][TASK]["tests"][0]["verdict"] = "clean"
    (tmp_path / "contamination.json").write_text(json.dumps(summary), encoding="utf-8")
    with pytest.raises(DataError, match=r"tasks\.terra\.tests\[0\]"):
        ContaminationResult.read(tmp_path)


def test_refusals_are_one_line(cli, tmp_path):
    result = cli("contamination", "-m", "majority", "-t", TASK, "-o", tmp_path)
    assert result.exit_code == 2 and "needs a language model" in result.output
    result = cli("contamination", "-m", "hf:nowhere", "-t", TASK, "--text", "html", "-o", tmp_path)
    assert result.exit_code == 2 and "--text html" in result.output
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    result = cli("contamination", "-m", "hf:nowhere", "-t", TASK, "--members", tmp_path / "empty.txt")
    assert result.exit_code == 2 and "no ids" in result.output


def _checker():
    from rueval.results.checks import Checker

    return Checker("contamination.json")


def test_a_run_rescored_on_unflagged_items_and_the_report_section(cli, members_model, tiny_gpt2_dir, tmp_path):
    from rueval.results import RunResult

    model, _ = members_model
    ran = cli("run", "-m", f"hf:{model}", "-t", TASK, "-o", tmp_path / "run", "-q")
    assert ran.exit_code == 0, ran.output
    scored = RunResult.read(tmp_path / "run").tasks[TASK]
    # the run scored val; the model learnt half of test: against test as unseen, val's items are audited
    result = audit(cli, model, tmp_path / "audit", "--split", scored.split, "--run", tmp_path / "run")
    found = result.tasks[TASK].run_scores
    assert found["rows"] == scored.n and "note" not in found
    assert found["flagged_rows"] == found["flagged_items"] < scored.n  # terra: one row per item
    for metric, value in scored.metrics.items():
        assert found["metrics"][metric]["full"] == pytest.approx(value)
        if found["flagged_rows"] == 0:
            assert found["metrics"][metric]["unflagged"] == pytest.approx(value)
    report = cli("report", tmp_path / "run", tmp_path / "audit", "-o", tmp_path / "report.html")
    assert report.exit_code == 0, report.output
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="contamination"' in page and result.tasks[TASK].verdict in page and "Rescored run" in page


def test_a_run_without_the_task_is_refused_before_any_work(cli, tiny_gpt2_dir, tmp_path):
    ran = cli("run", "-m", "majority", "-t", "rcb", "-o", tmp_path / "run", "-q")
    assert ran.exit_code == 0, ran.output
    result = cli("contamination", "-m", f"hf:{tiny_gpt2_dir}", "-t", TASK, "--run", tmp_path / "run", "-o", tmp_path)
    assert result.exit_code == 2 and "the run has no terra" in result.output
    assert not (tmp_path / "contamination.json").exists()


def test_corpus_overlap_fills_each_items_ngram_overlap(cli, tiny_gpt2_dir, tmp_path):
    """--corpus: the item a JSON Lines corpus holds word for word shares all its 13-grams with it, the others none;
    the summary counts it as lm-eval's rule flags it."""
    ids, texts = member_ids_and_texts()
    corpus = tmp_path / "corpus.jsonl"
    lines = [{"content": "Совсем другой текст о погоде и море."}, {"content": texts[0]}]
    corpus.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    result = audit(cli, tiny_gpt2_dir, tmp_path / "out", "--corpus", corpus, "--corpus-field", "content")
    found = result.tasks[TASK]
    assert found.corpus["flagged"] == 1 and found.corpus["corpus_documents"] == 2
    assert any(note.startswith("--corpus: 1 of 20 items") for note in found.notes)
    shares = {row.idx: row.ngram_overlap for row in read_item_scores(tmp_path / "out", TASK)}
    assert shares[ids[0]] == 1.0
    assert all(share in (0.0, None) for idx, share in shares.items() if idx != ids[0])


def test_guessing_on_a_choice_task_and_a_note_on_another(cli, tiny_gpt2_dir, tmp_path):
    """--guessing: TS-Guessing's summary for PARus's labelled items (the val split), a note for TERRa's."""
    result = cli(
        "contamination", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus,terra", "--split", "val", "--guessing",
        "-o", tmp_path, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    tasks = ContaminationResult.read(tmp_path).tasks
    guessing = tasks["parus"].guessing
    assert guessing["items"] > 0 and guessing["items"] + guessing["left_out"] == tasks["parus"].items
    assert 0 <= guessing["exact_match_rate"] <= 1 and 0 <= guessing["chance"] <= 1 and 0 < guessing["p_value"] <= 1
    assert tasks["terra"].guessing == {} and any("no choice task" in note for note in tasks["terra"].notes)
