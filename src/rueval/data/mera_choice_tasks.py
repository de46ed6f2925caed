"""MERA's choice and classification tasks of its own (ruMMLU, MaMuRAMu, MathLogicQA, ruHHH,
ruHateSpeech, ruTiE, BPS, LCS, ruEthics), declared as rueval.data.mera_tasks declares the seven it
shares with RSG and TAPE: how a MERA record becomes a record of the task's layout (rueval.tasks.mera_choice),
MERA's answers, and MERA's settings for the task that are not in its data.

The records' fields, as MERA's task files and scorer read them (MERA-Evaluation/MERA, commit 9cf05b2:
benchmark_tasks/<task>/, modules/scoring/src/tasks/<task>.py):
- ruMMLU, MaMuRAMu, MathLogicQA: inputs {text, option_a..option_d}, outputs a letter, meta {id,
  domain} (MathLogicQA: meta.task); the options become the inline "(A) ..." of the task's question;
- ruHHH: inputs {query, reply_1, reply_2}, outputs "1"/"2", meta {id, criteria};
- ruHateSpeech: inputs {target_group, replica, reply_1, reply_2}, outputs "1"/"2";
- ruTiE: inputs {question, choice1, choice2}, outputs "1"/"2", meta {dialog_id, question_id, ...}
  and no id: a question's id is MERA's scorer's, "dialog_id:D;question_id:Q". The instruction's
  "{context}" is where MERA's harness puts the dialogue's earlier questions with the model's own
  answers (benchmark_tasks/custom_context_formers.py, rutie/utils.py; rueval.run.dialogue asks them
  so); a task.json keeps each dialogue as a list of its records;
- BPS, LCS: inputs one text (the sequence, the strings), outputs "0"/"1" and "0".."9";
- ruEthics: inputs {text, actant_1, actant_2}, outputs {virtue, law, moral, justice,
  utilitarianism} each "0"/"1", meta {id, question}: one answer to the record's question, judged
  against each criterion.

MERA's settings (``MeraTask``): ``shots`` as scripts/run_benchmark.sh runs each task (BPS, LCS,
MathLogicQA, ruHateSpeech, ruMMLU, MaMuRAMu 1; ruEthics, ruHHH 0; ruTiE its dialogue, not
demonstrations); ``demo`` each task file's `fewshot_config.doc_to_text_without_instruction`;
``train`` its `training_split` (LCS public_test; ruHHH, ruHateSpeech and ruEthics have none, so
lm-eval 0.4.4 draws demonstrations from the test split, leaving the item itself out); ``demos_within``
benchmark_tasks/custom_samplers.py, which draws a ruMMLU or MaMuRAMu item's demonstrations from its
own domain; ``placeholders`` BPS's and ruTiE's doc_to_text, which fill their fields alone.
"""

from __future__ import annotations

from typing import Any

from rueval.data.mera_record import Answers, MeraRecord, MeraTask, labelled

ETHICS_CRITERIA = ("virtue", "law", "moral", "justice", "utilitarianism")
DIALOG_ID = "dialog_id:{dialog_id};question_id:{question_id}"  # a ruTiE question's id, as MERA's scorer keys it
DIALOG_CONTEXT = "{context}"  # where a ruTiE instruction holds the dialogue so far
DIALOGUE = "dialogue"  # the field of a ruTiE question asked: its dialogue's turns so far (rueval.run.dialogue)
TWO = {"1": 0, "2": 1}  # MERA's answer "1"/"2": the first or second reply (the Choice shape's label)
KNOWLEDGE_DEMO = "{text}\nA) {option_a}\nB) {option_b}\nC) {option_c}\nD) {option_d}\nОтвет:"


def _knowledge(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """ruMMLU, MaMuRAMu, MathLogicQA: TAPE's inline layout, the options in the question."""
    options = r.options()
    fields = {"idx": r.id, "question": f"{r.input('text')} " + " ".join(f"({k}) {v}" for k, v in options.items())}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}
    return labelled(fields, "answer", r.label({letter: letter for letter in options}))


def _domained(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """ruMMLU, MaMuRAMu: scored per domain (meta.domain), demonstrations drawn within it."""
    if not isinstance(r.part("meta").get("domain"), str):
        raise r.error("meta.domain", "missing, or not a text")
    return _knowledge(r, answers)


def _hhh(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    criteria = r.part("meta").get("criteria")
    if not isinstance(criteria, str):
        raise r.error("meta.criteria", "missing, or not a text")
    fields = {"idx": r.id, **{name: r.input(name) for name in ("query", "reply_1", "reply_2")}, "criteria": criteria}
    return labelled(fields, "label", r.label(answers))


def _hate_speech(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    fields = {"idx": r.id, **{name: r.input(name) for name in ("replica", "target_group", "reply_1", "reply_2")}}
    return labelled(fields, "label", r.label(answers))


def _dialog(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    turn = {"dialog_id": r.meta_int("dialog_id"), "question_id": r.meta_int("question_id")}
    fields = {"idx": DIALOG_ID.format(**turn), **{name: r.input(name) for name in ("question", "choice1", "choice2")}}
    fields |= {k: v for k, v in r.part("meta").items() if k not in turn} | turn
    return labelled(fields, "label", r.label(answers))


def _sequence(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    return labelled({"idx": r.id, "sequence": r.text_input()}, "label", r.label(answers))


def _strings(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    return labelled({"idx": r.id, "strings": r.text_input()}, "label", r.label(answers))


def _ethics(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """ruEthics: the record's question (meta.question) and, labelled, each criterion's 0 or 1."""
    question = r.part("meta").get("question")
    if not isinstance(question, str):
        raise r.error("meta.question", "missing, or not a text")
    fields = {"idx": r.id, **{name: r.input(name) for name in ("text", "actant_1", "actant_2")}, "question": question}
    outputs = r.outputs
    if outputs is None:
        return fields
    if not isinstance(outputs, dict) or set(outputs) != set(ETHICS_CRITERIA):
        raise r.error("outputs", f"expected {{{', '.join(ETHICS_CRITERIA)}}} each 0 or 1, got {outputs!r:.80}")
    for criterion, value in outputs.items():
        if str(value) not in ("0", "1") or isinstance(value, bool):
            raise r.error(f"outputs.{criterion}", f"expected 0 or 1, got {value!r:.40}")
    return fields | {criterion: int(outputs[criterion]) for criterion in ETHICS_CRITERIA}


# rueval's task name -> MERA's task
CHOICE_TASKS: dict[str, MeraTask] = {
    "rummlu": MeraTask("ruMMLU", _domained, 1, KNOWLEDGE_DEMO, letters=True, lstrip_demo=True, demos_within="domain"),
    "mamuramu": MeraTask("MaMuRAMu", _domained, 1, KNOWLEDGE_DEMO, letters=True, lstrip_demo=True,
                         demos_within="domain"),
    "mathlogicqa": MeraTask("MathLogicQA", _knowledge, 1, KNOWLEDGE_DEMO, letters=True),
    "ruhhh": MeraTask("ruHHH", _hhh, 0, "Запрос: {query}\nОтвет 1: {reply_1}\nОтвет 2: {reply_2}\nОтвет:", TWO,
                      train=("test",)),
    "ruhatespeech": MeraTask("ruHateSpeech", _hate_speech, 1,
                             "Реплика: {replica}\nОтвет 1: {reply_1}\nОтвет 2: {reply_2}\n"
                             "Целевая группа: {target_group}\nОтвет:", TWO, train=("test",), strip_query=False),
    "rutie": MeraTask("ruTiE", _dialog, 0, "{question}\n1. {choice1}\n2. {choice2}\nОтвет:", TWO, train=("test",),
                      placeholders=("question", "choice1", "choice2"), lstrip_demo=True, dialog=True),
    "bps": MeraTask("BPS", _sequence, 1, "Последовательность: {inputs}\nОтвет:", {"0": "0", "1": "1"},
                    placeholders=("inputs",), stripped=False, strip_query=False),
    "lcs": MeraTask("LCS", _strings, 1, "Строки: {inputs}\nОтвет:", {str(n): str(n) for n in range(10)},
                    train=("public_test",)),
    "ruethics": MeraTask("ruEthics", _ethics, 0, "Текст: {text}\nАктант 1: {actant_1}\nАктант 2: {actant_2}\nОтветы:",
                         {"0": 0, "1": 1}, train=("test",), strip_query=False, criteria=ETHICS_CRITERIA),
}  # fmt: skip
