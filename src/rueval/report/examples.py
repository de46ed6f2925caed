"""The report's per-example view: each run's sample logs (OUT/samples/samples_<task>_<date id>.jsonl,
written by --log-samples), per task a list of examples to filter right / wrong, each opening onto the prompts
sent and every option's score. The filter is CSS only (links to anchors, styled by :target), so the
page stays script-free and a filtered view has its own address (report.html#samples-0-wrong).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from rueval.core.errors import DataError, RuevalError
from rueval.data.local import decode_lines, parse_json_line
from rueval.report.runs import Run, task_names
from rueval.results.lm_eval import sample_files

MAX_SHOWN = 1000  # examples per run and task on the page; the log keeps them all
FILTERS = ("all", "right", "wrong")

CSS = """
.samples { margin: 1em 0 2em; } .samples nav a { display: inline-block; padding: .1em .7em; margin-right: .3em;
  border: 1px solid #c4ccd6; border-radius: 1em; font-size: .85em; text-decoration: none; color: #1d232b; }
.samples > .right:target ~ .list > .wrong, .samples > .wrong:target ~ .list > .right { display: none; }
.samples > .right:target ~ nav a.right, .samples > .wrong:target ~ nav a.wrong { background: #1d232b; color: #fff; }
details.sample { border-left: 4px solid #c4ccd6; margin: .35em 0; padding: .2em .6em; background: #fafbfc; }
details.sample.right { border-left-color: #3a9d5d; } details.sample.wrong { border-left-color: #d0473c; }
details.sample summary { cursor: pointer; font-size: .9em; }
details.sample pre { white-space: pre-wrap; word-break: break-word; background: #f0f3f6; padding: .5em;
                     font-size: .85em; margin: .4em 0; }
tr.chosen td { font-weight: 600; background: #eef6ff; }
"""


def read_samples(path: Path) -> list[dict[str, Any]]:
    """A sample log's lines; a DataError naming the file, line and field of a malformed one."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise RuevalError(f"{path}: cannot be read ({e.strerror or e})") from None
    lines = []
    for number, text in enumerate(decode_lines(raw, str(path)), 1):
        if not text.strip():
            continue
        line = parse_json_line(text, str(path), number)
        for key in ("doc_id", "target", "filtered_resps"):
            if key not in line:
                raise DataError(str(path), "missing", line=number, field=key)
        if not isinstance(line["filtered_resps"], list):
            raise DataError(str(path), "expected a list", line=number, field="filtered_resps")
        if not isinstance(line.get("arguments", {}), Mapping):
            raise DataError(str(path), "expected an object (gen_args_0, ...)", line=number, field="arguments")
        lines.append(line)
    return lines


def examples_section(runs: Sequence[Run]) -> str:
    """Per run and task with a sample log, its examples; empty when no run logged samples."""
    blocks: list[str] = []
    for run in runs:
        for task in task_names([run]):
            logs = sample_files(run.dir, task)
            if task in run.tasks and logs:
                blocks.append(_task_block(len(blocks), run.label, task, read_samples(logs[-1])))
    if not blocks:
        return ""
    intro = (
        "<p class=muted>Each example as the run logged it (--log-samples): open one to see the prompt sent and "
        "every option's log-likelihood (the chosen option in bold) or the generated text. One entry per example "
        "and few-shot setting (k, episode).</p>"
    )
    return intro + "".join(blocks)


def is_right(line: Mapping[str, Any]) -> bool:
    """rueval's own verdict; for other logs (lm-eval's), a per-example accuracy or exact match of 1."""
    if "correct" in line:
        return bool(line["correct"])
    return any(line.get(metric) in (1, 1.0, True) for metric in ("acc", "exact_match", "em"))


def _task_block(number: int, run_label: str, task: str, lines: list[dict[str, Any]]) -> str:
    right = sum(is_right(line) for line in lines)
    counts = {"all": len(lines), "right": right, "wrong": len(lines) - right}
    name = f"samples-{number}"
    anchors = "".join(f'<span id="{name}-{f}" class="{f}"></span>' for f in FILTERS[1:])
    links = "".join(f'<a class="{f}" href="#{name}-{f}">{f} ({counts[f]})</a>' for f in FILTERS)
    shown = "".join(_sample(line) for line in lines[:MAX_SHOWN])
    more = (
        f"<p class=muted>The first {MAX_SHOWN} of {len(lines)} are shown; the log has them all.</p>"
        if len(lines) > MAX_SHOWN
        else ""
    )
    title = f"<h3>{escape(task)} · {escape(run_label)}</h3>"
    body = f'{anchors}<nav>{links}</nav><div class="list">{shown}</div>{more}'
    return f'{title}<div class="samples" id="{name}-all">{body}</div>'


def _sample(line: Mapping[str, Any]) -> str:
    verdict = "right" if is_right(line) else "wrong"
    prediction = line.get("prediction", line["filtered_resps"][0] if line["filtered_resps"] else "")
    setting = f"k={line['k']}, episode {line['episode']} · " if "k" in line else ""
    summary = (
        f"#{escape(str(line['doc_id']))} · {setting}{'✓' if verdict == 'right' else '✗'} "
        f"predicted {escape(_short(_text(prediction)))}, gold {escape(_short(str(line['target'])))}"
    )
    body = _requests(line) if line.get("arguments") else ""
    document = f"<details><summary>document</summary><pre>{escape(_text(line.get('doc', {})))}</pre></details>"
    return f'<details class="sample {verdict}"><summary>{summary}</summary>{body}{document}</details>'


def _requests(line: Mapping[str, Any]) -> str:
    """The prompts sent: each distinct context once, then its options' scores or the generation."""
    arguments = list(line["arguments"].values())
    responses = line.get("resps", [])
    html: list[str] = []
    options: list[tuple[str, float, str]] = []  # each option's text, log-likelihood and greedy flag
    context = None

    def flush() -> None:
        if options:
            best = max(range(len(options)), key=lambda i: options[i][1])
            rows = "".join(
                f"<tr{' class=chosen' if i == best else ''}><td class=text>{escape(repr(text))}</td>"
                f"<td>{score:.3f}</td><td>{escape(greedy)}</td></tr>"
                for i, (text, score, greedy) in enumerate(options)
            )
            html.append(
                "<table><thead><tr><th>option</th><th>log-likelihood</th><th>greedy</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
            options.clear()

    for argument, response in zip(arguments, responses, strict=False):
        prompt, second = argument.get("arg_0", ""), argument.get("arg_1", "")
        if prompt != context:
            flush()
            context = prompt
            html.append(f"<pre>{escape(str(prompt))}</pre>")
        result = response[0] if isinstance(response, list) and response else response
        if isinstance(second, Mapping):  # a generation and its settings
            settings = ", ".join(f"{key} {_text(value)}" for key, value in second.items())
            html.append(f"<p class=muted>generated ({escape(settings)}):</p><pre>{escape(_text(result))}</pre>")
        else:
            score, greedy = (result + ["", ""])[:2] if isinstance(result, list) else (result, "")
            options.append((str(second), _number(score), str(greedy)))
    flush()
    return "".join(html)


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _short(text: str, limit: int = 120) -> str:
    """A summary line's text: long generations are cut (the entry shows them whole)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
