"""MERA's choice and classification tasks of its own, declared as rueval's tasks: their layout (the
records rueval.data.mera_choice_tasks makes of MERA's), shapes, metrics and breakdowns, as MERA's
task files and scorer define them (MERA-Evaluation/MERA, commit 9cf05b2: benchmark_tasks/<task>/,
modules/scoring/src/tasks/<task>.py):

- accuracy for all but ruEthics; MERA's scorer also gives ruMMLU's and MaMuRAMu's per domain
  (acc.<domain>), ruHHH's per criterion (acc.<criteria>), ruHateSpeech's per target group
  (acc.<target_group>): the task's breakdown, keyed by the group as the record writes it;
- ruEthics: the Matthews correlation of the one answer with each criterion, over the records of each
  question (MERA's "<question>.<criterion>", 15 figures): the breakdown; its headline is rueval's,
  the five criteria's MCC over every record, averaged.

They are asked with the record's own instruction (rueval.tasks.prompts.mera) and read from MERA's
files alone.
"""

from __future__ import annotations

from rueval.data.mera_choice_tasks import ETHICS_CRITERIA
from rueval.data.mera_tasks import NAME
from rueval.data.records import IdRule, Layout
from rueval.tasks.base import Task
from rueval.tasks.shapes import Choice, InlineChoice, MultiLabel, Shape, Texts

# MERA's meta.id, or a ruTiE question's "dialog_id:D;question_id:Q"
LAYOUT = Layout(IdRule(("idx",), (int, str), required=True))
SPLITS = {"train": ("train.jsonl",), "val": ("val.jsonl",), "test": ("test.jsonl",)}
PROMPT = "rueval.tasks.prompts.mera:MERA_ONLY"
TWO_REPLIES = ("reply_1", "reply_2")


def _task(
    name: str, folder: str, description: str, shape: Shape, metrics: tuple[str, ...] = ("accuracy",), by: str = ""
) -> Task:
    return Task(name=name, benchmark=NAME, layout=LAYOUT, folder=folder, description=description, shape=shape,
                metrics=metrics, split_files=SPLITS, prompt=PROMPT, breakdown_by=by)  # fmt: skip


TASKS = (
    _task("rummlu", "ruMMLU", "school and professional knowledge in 57 domains, four options", InlineChoice("question"),
          by="domain"),
    _task("mamuramu", "MaMuRAMu", "knowledge and reasoning in 57 domains, four options", InlineChoice("question"),
          by="domain"),
    _task("mathlogicqa", "MathLogicQA", "math and logic problems, four options", InlineChoice("question")),
    _task("ruhhh", "ruHHH", "the more helpful, honest or harmless of two replies", Choice(("query",), TWO_REPLIES),
          by="criteria"),
    _task("ruhatespeech", "ruHateSpeech", "the reply to a toxic remark that is not toxic to its target group",
          Choice(("replica", "target_group"), TWO_REPLIES), by="target_group"),
    _task("rutie", "ruTiE", "a Turing-test dialogue: the better of two answers to each question",
          Choice(("question",), ("choice1", "choice2"))),
    _task("bps", "BPS", "is the bracket sequence balanced", Texts(("sequence",), ("0", "1"))),
    _task("lcs", "LCS", "the length of two strings' longest common subsequence",
          Texts(("strings",), tuple(map(str, range(10))))),
    _task("ruethics", "ruEthics", "is an actant's act right, good or ethical, judged by five criteria",
          MultiLabel("text", ETHICS_CRITERIA), metrics=("mcc",), by="question"),
)  # fmt: skip
