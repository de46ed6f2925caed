"""Made-up MERA records for the seven tasks rueval shares with MERA, and the two layouts MERA has
published them in: task folders (`<Task>/task.json`, ai-forever/MERA) and a snapshot of the dataset
repository (`data/<config>/<split>.jsonl` with the dataset card's `configs`, MERA-evaluation/MERA, as
`datasets` loads it). Records are in the current shape (MultiQ's answer a text, ";" between
alternatives); ``spans`` turns a MultiQ record into the older shape (answer spans of the main text)."""

from __future__ import annotations

import json
from pathlib import Path

RCB_INSTRUCTION = 'Ситуация: "{premise}"\nГипотеза: "{hypothesis}"\nОтветь 1, 2 или 3.'
PARUS_INSTRUCTION = "{premise} Что было {task}?\n1. {choice1}\n2. {choice2}\nОтветь 1 или 2."
RWSD_INSTRUCTION = "{text}\nОтносится ли «{span2_text}» к «{span1_text}»? Ответь Да или Нет."
QA_INSTRUCTION = "{question}\nA. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\nОтвет:"
QA5_INSTRUCTION = "{question}\nA. {option_a}\nB. {option_b}\nC. {option_c}\nD. {option_d}\nE. {option_e}\nОтвет:"
MULTIQ_INSTRUCTION = "Текст 1: {support_text}\nТекст 2: {text}\nВопрос: {question}\nОтвет:"
CHEGEKA_INSTRUCTION = 'Категория "{topic}". Вопрос: {text}\nОтвет:'
MAIN_TEXT = "Кыбантывис — река в России. Левый приток Айювы."
# a split -> its file in the snapshot (LCS's demonstrations and ruModAr's labelled split: public_test)
SPLIT_FILES = {"train": "train", "validation": "dev", "test": "test", "public_test": "public_test"}


def rcb(id_, outputs, premise="Маша знала, что идёт дождь."):
    inputs = {"premise": premise, "hypothesis": "Идёт дождь."}
    meta = {"id": id_, "verb": "знать", "negation": "no_negation", "genre": "kp"}
    return {"instruction": RCB_INSTRUCTION, "inputs": inputs, "outputs": outputs, "meta": meta}


def parus(id_, outputs, task="cause"):
    inputs = {"premise": "Девушка покраснела.", "choice1": "Она выпила воды.", "choice2": "Ей сделали комплимент."}
    return {"instruction": PARUS_INSTRUCTION.replace("{task}", "причиной" if task == "cause" else "следствием"),
            "inputs": inputs, "outputs": outputs, "meta": {"task": task, "id": id_}}  # fmt: skip


def rwsd(id_, outputs):
    inputs = {"text": "Женя поблагодарила Сашу за помощь, которую она оказала.", "span1_index": 2,
              "span1_text": "Сашу", "span2_index": 6, "span2_text": "она оказала"}  # fmt: skip
    return {"instruction": RWSD_INSTRUCTION, "inputs": inputs, "outputs": outputs, "meta": {"id": id_}}


def science(id_, outputs, question="Что притягивает магнит?", fifth=None):
    inputs = {"question": question, "option_a": "фольгу", "option_b": "скрепку", "option_c": "линейку",
              "option_d": "карандаш"}  # fmt: skip
    if fifth is not None:
        inputs["option_e"] = fifth
    instruction = QA_INSTRUCTION if fifth is None else QA5_INSTRUCTION
    return {"instruction": instruction, "inputs": inputs, "outputs": outputs, "meta": {"id": id_, "exam_name": "MCAS"}}


def multiq(id_, outputs):
    inputs = {"question": "Куда впадает река?", "support_text": "Висвож впадает в Кыбантывис.", "text": MAIN_TEXT}
    return {"instruction": MULTIQ_INSTRUCTION, "inputs": inputs, "outputs": outputs,
            "meta": {"id": id_, "bridge_answers": "" if not outputs else "Кыбантывис"}}  # fmt: skip


def chegeka(id_, outputs, text="ЭТОТ МЕТАЛЛ жидкий."):
    return {"instruction": CHEGEKA_INSTRUCTION, "inputs": {"text": text, "topic": "Металлы"},
            "outputs": outputs, "meta": {"id": id_, "author": "А. Б."}}  # fmt: skip


def spans(record):
    """A MultiQ record in ai-forever/MERA's shape: answers and bridge answers as spans of the texts."""
    text, answers = record["inputs"]["text"], [a for a in record["outputs"].split(";") if a]
    outputs = [{"label": "answer", "length": len(a), "offset": text.find(a), "segment": a} for a in answers]
    bridge = [{"label": "passage", "length": 10, "offset": 0, "segment": "Кыбантывис"}] if answers else []
    return {**record, "outputs": outputs, "meta": {**record["meta"], "bridge_answers": bridge}}


def seven_tasks(test_answers=False):
    """The seven tasks as MERA publishes them: train, a test (without answers unless ``test_answers``),
    and validation for RCB, PARus and RWSD alone; ids that are not positions."""

    def test(outputs):
        return outputs if test_answers else ""

    return {
        "RCB": {"train": [rcb(100, "3"), rcb(101, "3"), rcb(102, "1")], "validation": [rcb(90, "2"), rcb(91, "3")],
                "test": [rcb(7, test("2")), rcb(3, test("3")), rcb(11, test("1"))]},
        "PARus": {"train": [parus(1, "2"), parus(2, "2"), parus(3, "1", "effect")], "validation": [parus(80, "1")],
                  "test": [parus(40, test("1"), "effect"), parus(41, test("2"))]},
        "RWSD": {"train": [rwsd(5, "Нет"), rwsd(6, "Да")], "validation": [rwsd(70, "Нет")],
                 "test": [rwsd(9, test("Да")), rwsd(8, test("Нет"))]},
        "ruWorldTree": {"train": [science(1, "B"), science(2, "A", "Что тонет в воде?", fifth="пробка")],
                        "test": [science(21, test("B")), science(22, test("E"), fifth="гвоздь")]},
        "ruOpenBookQA": {"train": [science(1, "A"), science(2, "C")], "test": [science(31, test("D"))]},
        "MultiQ": {"train": [multiq(1, "Айювы")],
                   "test": [multiq(424, test("Айювы")), multiq(425, test("России;Коми"))]},
        "CheGeKa": {"train": [chegeka(1, "Ртуть"), chegeka(2, "Галлий;Gallium", "ЭТОТ МЕТАЛЛ тает в руке.")],
                    "test": [chegeka(131, test("Ртуть;Меркурий"))]},
    }  # fmt: skip


def write_task_folders(root: Path, tasks: dict) -> Path:
    """ai-forever/MERA's layout: <root>/<Task>/task.json, {"data": {split: [records]}}; MultiQ as spans."""
    for name, splits in tasks.items():
        if name == "MultiQ":
            splits = {split: [spans(r) for r in records] for split, records in splits.items()}
        (root / name).mkdir(parents=True, exist_ok=True)
        document = json.dumps({"data": splits}, ensure_ascii=False)
        (root / name / "task.json").write_text(document, encoding="utf-8")
    return root


def write_snapshot(root: Path, tasks: dict) -> Path:
    """MERA-evaluation/MERA's layout: <root>/data/<config>/{train,dev,test}.jsonl and the dataset card's
    configs, which name each split's file as `datasets` loads a snapshot (load_dataset(root, config))."""
    card = ["---", "configs:"]
    for name, splits in tasks.items():
        config = name.lower()
        card += [f"- config_name: {config}", "  data_files:"]
        for split, records in splits.items():
            path = root / "data" / config / f"{SPLIT_FILES[split]}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
            card += [f"  - split: {split}", f"    path: {path.relative_to(root).as_posix()}"]
    (root / "README.md").write_text("\n".join([*card, "---", "", "MERA (made-up records)", ""]), encoding="utf-8")
    return root


LAYOUTS = {"task folders": write_task_folders, "dataset snapshot": write_snapshot}
