"""Made-up MERA records of MERA's generative tasks (SimpleAr, ruModAr, ruMultiAr, USE, ruDetox,
ruHumanEval, ruCodeEval), in the shapes of MERA's dataset cards, for either layout (mera_files)."""

from __future__ import annotations

SIMPLEAR_INSTRUCTION = "Напишите ответ для математического выражения.\n{inputs}"
RUMODAR_INSTRUCTION = "Вычисли результат последнего выражения по примерам. Запиши в ответ только число.\n{inputs}"
RUMULTIAR_INSTRUCTION = "Вычисли значение выражения.\n{inputs}"
USE_INSTRUCTION = "Задание: {task}\nТекст: {text}\nВарианты: {choices}\n{additional_text}\nОтвет:"
RUDETOX_INSTRUCTION = 'Токсичное сообщение: "{toxic_comment}"\nПерепиши его вежливо. Ответ:'
CODE_INSTRUCTION = "Допиши функцию.\n{function}"
TEXT, BASED, MATCHING = "text", "multiple_choice_based_on_text", "matching"
INDEPENDENT = "multiple_choice_independent_options"
ADD = 'def add(a, b):\n    """Сумма a и b."""\n'


def arithmetic(instruction, id_, inputs, outputs, **meta):
    return {"instruction": instruction, "inputs": inputs, "outputs": outputs, "meta": {"id": id_, **meta}}


def use(id_, outputs, kind, id_task, variant, score, text="Текст задания."):
    inputs = {"task": f"Задание {id_task}.", "text": text, "choices": "1) а\n2) б\n3) в", "additional_text": ""}
    meta = {"id_task": id_task, "variant": variant, "score": score, "type": kind, "id": id_}
    return {"instruction": USE_INSTRUCTION, "inputs": inputs, "outputs": outputs, "meta": meta}


def rudetox(id_, inputs, outputs):
    return {"instruction": RUDETOX_INSTRUCTION, "inputs": inputs, "outputs": outputs, "meta": {"id": id_}}


def code(id_, outputs, function=ADD, tests="[{'a': 1, 'b': 2}, {'a': 5, 'b': 5}]", entry_point="add"):
    meta = {"id": id_, "canonical_solution": "    return a + b\n", "entry_point": entry_point}
    return {"instruction": CODE_INSTRUCTION, "inputs": {"function": function, "tests": tests},
            "outputs": outputs, "meta": meta}  # fmt: skip


def generative_tasks(test_answers=True):
    """The seven generative tasks as MERA publishes them (the code tasks a test alone, ruModAr a
    public_test for its labelled split); tests answered unless ``test_answers`` is false."""

    def test(outputs):
        return outputs if test_answers else ("" if isinstance(outputs, str) else [])

    return {
        "SimpleAr": {"train": [arithmetic(SIMPLEAR_INSTRUCTION, 1, "2 + 2 = ", "4"),
                               arithmetic(SIMPLEAR_INSTRUCTION, 2, "10 - 3 = ", "7"),
                               arithmetic(SIMPLEAR_INSTRUCTION, 3, "5 + 5 = ", "10")],
                     "test": [arithmetic(SIMPLEAR_INSTRUCTION, 40, "12 + 30 = ", test("42")),
                              arithmetic(SIMPLEAR_INSTRUCTION, 41, "7 * 6 = ", test("42")),
                              arithmetic(SIMPLEAR_INSTRUCTION, 42, "9 - 9 = ", test("0"))]},
        "ruModAr": {"test": [arithmetic(RUMODAR_INSTRUCTION, 1, "1 + 1 -> 3\n2 + 2 ->", "", task_type="plus_one")],
                    "public_test": [arithmetic(RUMODAR_INSTRUCTION, 7, "1 + 1 -> 3\n2 + 2 ->", "5",
                                               task_type="plus_one"),
                                    arithmetic(RUMODAR_INSTRUCTION, 8, "3 + 3 -> 7\n4 + 4 ->", "9",
                                               task_type="plus_one")]},
        "ruMultiAr": {"train": [arithmetic(RUMULTIAR_INSTRUCTION, 1, " (1 + 2) * 3 = ", "9")],
                      "test": [arithmetic(RUMULTIAR_INSTRUCTION, 5, "(2 + 2) * 2 = ", test("8")),
                               arithmetic(RUMULTIAR_INSTRUCTION, 6, "(1 - 4) * 2 = ", test("-6"))]},
        "USE": {"train": [use(1, "а", TEXT, "5", 1, 1, "Обучающий текст."), use(2, "1,2", BASED, "1", 1, 1),
                          use(3, "2,1", MATCHING, "26", 1, 4), use(4, "2,3", INDEPENDENT, "16", 1, 2)],
                "test": [use(10, test("река"), TEXT, "5", 7, 1), use(11, test("1,3"), BASED, "1", 7, 1),
                         use(12, test("1,2,3,4"), MATCHING, "26", 8, 4),
                         use(13, test("1,2,4"), INDEPENDENT, "16", 8, 2)]},
        "ruDetox": {"train": [rudetox(1, "ты дурак", "ты не прав")],
                    "test": [rudetox(30, "это бред ", test("это неверно"))]},
        "ruHumanEval": {"test": [code(0, test(["3", "10"])),
                                 code(1, test(["True", "False"]), 'def even(n):\n    """Чётно ли n."""\n',
                                      "[{'n': 4}, {'n': 3}]", "even")]},
        "ruCodeEval": {"test": [code(5, test(["3", "10"]))]},
    }  # fmt: skip
