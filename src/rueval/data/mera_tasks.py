"""MERA's tasks in rueval, declared once: the seven it shares with RSG and TAPE, MERA's own choice and
classification tasks (rueval.data.mera_choice_tasks) and its generative tasks
(rueval.data.mera_generative_tasks): how a MERA record (`{"instruction", "inputs", "outputs", "meta":
{"id", ...}}`, in either layout MERA has published, rueval.data.mera) becomes a record of the task's own
layout (RSG's and TAPE's fields and labels), MERA's answers, and MERA's settings for the task that are
not in its data.

A converted record keeps MERA's own under the field "mera" (its instruction, inputs and outputs as
they are): prompts ask with the record's own instruction, and the submission writes its answer in the
shape of the record's own outputs. MERA's `meta.id` becomes the example's idx. Outputs MERA leaves
empty (its test sets' hidden answers: "", [], or spans with no text) read as unlabelled.

MERA's settings that are not in its data come from MERA-Evaluation/MERA (commit 9cf05b2) and the
lm-evaluation-harness it runs (its submodule, commit 6c59a42, lm-eval 0.4.4):
- ``MeraTask.shots``: each task's `num_fewshot` in benchmark_tasks/rsg/{parus,rcb,rwsd}.yaml and
  benchmark_tasks/tape/{ruworldtree,ruopenbookqa,chegeka}.yaml (1) and tape/multiq.yaml (null), as
  scripts/run_benchmark.sh runs them (its FEWSHOTS: multiq in the group of 0);
- ``MeraTask.demo``: `fewshot_config.doc_to_text_without_instruction` of the same files, how a
  demonstration after the first, and the question after demonstrations, read (the first
  demonstration is the record's own instruction);
- ``MeraTask.cued``: the RSG files' `fewshot_config.query`, the instruction followed by "\\nОтвет:",
  where the TAPE files strip it;
- ``FEWSHOT_SEED``: scripts/run_benchmark.sh runs lm-eval with `--seed 1234`, the seed of its
  few-shot sampler (benchmark_tasks/custom_samplers.py: each test item's demonstrations drawn in turn);
- ``GENERATION_STOP``: benchmark_tasks/custom_generate_task.yaml, `generation_kwargs` (do_sample
  false, until "\\n"), whose `remove_whitespace` filter strips a generated answer's leading spaces;
- ``MAX_GEN_TOKS``: lm-eval 0.4.4's `HFLM.max_gen_toks`, 256, which MERA's task files leave as it is.
"""

from __future__ import annotations

from typing import Any

from rueval.data.mera_choice_tasks import CHOICE_TASKS
from rueval.data.mera_generative_tasks import convert_arithmetic, convert_code, convert_rudetox, convert_use
from rueval.data.mera_record import Answers, MeraRecord, MeraTask, labelled

NAME = "mera"  # the benchmark's name: -t mera, and the benchmark of a task read from its files
RECORD_FIELD = NAME  # the field of a converted record that keeps MERA's own
FEWSHOT_SEED = 1234
GENERATION_STOP = ("\n",)
MAX_GEN_TOKS = 256
ANSWER_CUE = "\nОтвет:"  # the RSG files' query: the instruction, then this
OPTION_LINE = "{letter}) {text}"  # MERA's demonstration lists its options "A) {option_a}", one a line


def _rcb(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    meta = r.part("meta")
    fields = {"idx": r.id, "premise": r.input("premise"), "hypothesis": r.input("hypothesis")}
    fields |= {name: meta[name] for name in ("verb", "negation", "genre") if name in meta}
    return labelled(fields, "label", r.label(answers))


def _parus(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    fields = {"idx": r.id, "premise": r.input("premise"), "choice1": r.input("choice1"), "choice2": r.input("choice2")}
    fields["question"] = r.part("meta").get("task")
    if fields["question"] not in ("cause", "effect"):
        raise r.error("meta.task", f"expected cause or effect, got {fields['question']!r}")
    return labelled(fields, "label", r.label(answers))


def _rwsd(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    target = {name: r.input(name) for name in ("span1_index", "span1_text", "span2_index", "span2_text")}
    return labelled({"idx": r.id, "text": r.input("text"), "target": target}, "label", r.label(answers))


def _science_qa(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """TAPE's layout: the record's options inline in the question, "(A) ... (B) ...", as many as it has."""
    options = " ".join(f"({letter}) {text}" for letter, text in r.options().items())
    fields = {"idx": r.id, "question": f"{r.input('question')} {options}"}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}
    return labelled(fields, "answer", r.label({letter: letter for letter in r.options()}))


def _multiq(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    """TAPE's layout; MERA's answers are spans of the main text (ai-forever/MERA) or the answer text,
    ";" between alternatives (MERA-evaluation/MERA): either becomes TAPE's spans."""
    main_text = r.input("text")
    fields = {
        "idx": r.id,
        "support_text": r.input("support_text"),
        "main_text": main_text,
        "question": r.input("question"),
        "bridge_answers": r.part("meta").get("bridge_answers", []),
    }
    outputs = r.outputs
    if isinstance(outputs, str):
        outputs = [{"label": "answer", "length": len(a), "offset": main_text.find(a), "segment": a}
                   for a in outputs.split(";")]  # fmt: skip
    elif outputs is not None and not (isinstance(outputs, list) and all(isinstance(a, dict) for a in outputs)):
        raise r.error("outputs", "expected the answer text, or a list of answer spans {label, length, offset, segment}")
    return labelled(fields, "main_answers", outputs)


def _chegeka(r: MeraRecord, answers: Answers) -> dict[str, Any]:
    fields = {"question_id": r.id, "question": r.input("text"), "topic": r.input("topic")}
    fields |= {k: v for k, v in r.part("meta").items() if k != "id"}
    if r.outputs is not None and not isinstance(r.outputs, str):
        raise r.error("outputs", f"expected the answer text, got {r.outputs!r:.60}")
    return labelled(fields, "answer", r.outputs)


LETTERS_DEMO = "{question}\n{options}\nОтвет:"  # options: OPTION_LINE, one a line
# rueval's task name -> MERA's task; answers as MERA's dataset cards give them
MERA: dict[str, MeraTask] = {
    "parus": MeraTask("PARus", _parus, 1, "Ситуация: {premise}\nФрагмент 1: {choice1}\nФрагмент 2: {choice2}\nОтвет:",
                      {"1": 0, "2": 1}, cued=True),
    "rcb": MeraTask("RCB", _rcb, 1, "Ситуация: {premise}\nГипотеза: {hypothesis}\nОтвет:",
                    {"1": "entailment", "2": "contradiction", "3": "neutral"}, cued=True),
    "rwsd": MeraTask("RWSD", _rwsd, 1, "Текст: {text}\nФрагмент 1: {span1_text}\nФрагмент 2: {span2_text}\nОтвет:",
                     {"Да": True, "Нет": False}, cued=True),
    "ru_worldtree": MeraTask("ruWorldTree", _science_qa, 1, LETTERS_DEMO, letters=True),
    "ru_openbook": MeraTask("ruOpenBookQA", _science_qa, 1, LETTERS_DEMO, letters=True),
    "multiq": MeraTask("MultiQ", _multiq, 0, "Вопрос: {question}\nТекст 1: {support_text}\nТекст 2: {text}\nОтвет:"),
    "chegeka": MeraTask("CheGeKa", _chegeka, 1, 'Категория "{topic}"\nВопрос: {text}\nОтвет:'),
}  # fmt: skip
MERA |= CHOICE_TASKS  # MERA's choice and classification tasks of its own (rueval.data.mera_choice_tasks)
# MERA's generative tasks (rueval.data.mera_generative_tasks: their converters and other settings);
# demo: the form over {inputs} (one text) or the inputs' fields; USE's depends on the question's type
MERA |= {
    "simplear": MeraTask("SimpleAr", convert_arithmetic, 2, "{inputs}"),
    "rumodar": MeraTask("ruModAr", convert_arithmetic, 0, "{inputs}"),
    "rumultiar": MeraTask("ruMultiAr", convert_arithmetic, 1, "{inputs}"),
    "use": MeraTask("USE", convert_use, 1, "", demos_within="id_task"),  # demonstrations of the item's question
    "rudetox": MeraTask(
        "ruDetox",
        convert_rudetox,
        1,
        "Токсичный текст: {toxic_comment}\nНетоксичный текст:",
        text_input="toxic_comment",
    ),
    "ruhumaneval": MeraTask("ruHumanEval", convert_code, 0, "Функция:\n{function}"),
    "rucodeeval": MeraTask("ruCodeEval", convert_code, 0, "Функция:\n{function}"),
}
MERA_TASKS = {name: task.name for name, task in MERA.items()}  # rueval's task name -> MERA's
# rueval's task name -> {label: MERA's answer text}, for MERA's submission files
ANSWERS = {name: {label: text for text, label in task.answers.items()} for name, task in MERA.items() if task.answers}
