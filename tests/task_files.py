"""Small lm-evaluation-harness task folders for tests: task files over JSON Lines written beside them,
named by absolute paths (lm-eval hands data_files to datasets as they are: relative to the working folder)."""

from __future__ import annotations

import json
from pathlib import Path

from support import write_jsonl

REVIEWS = [{"text": f"Отзыв номер {i}: {'хорошо' if i % 2 else 'плохо'}.", "label": i % 2} for i in range(8)]
QUESTIONS = [{"question": f"Сколько будет {i} и {i}?", "answer": str(2 * i)} for i in range(6)]


def task_file(folder: Path, name: str, body: str, records: list[dict] = REVIEWS) -> Path:
    """FOLDER/NAME.yaml: ``task: NAME``, its data (FOLDER/NAME.jsonl as the test split, and train), then ``body``."""
    data = write_jsonl(folder / f"{name}.jsonl", records)
    files = json.dumps({"train": str(data), "test": str(data)})
    text = f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files: {files}\n"
    text += "training_split: train\ntest_split: test\n" + body
    path = folder / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


CHOICE = """\
output_type: multiple_choice
doc_to_text: "{{text}}\\nОтзыв положительный?"
doc_to_target: label
doc_to_choice: ["нет", "да"]
metric_list:
  - metric: acc
"""
GENERATION = """\
output_type: generate_until
doc_to_text: "Вопрос: {{question}}\\nОтвет:"
doc_to_target: "{{answer}}"
generation_kwargs: {until: ["\\n"], max_gen_toks: 4}
metric_list:
  - metric: exact_match
    ignore_case: true
"""
