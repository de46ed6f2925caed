"""`rueval report`: the self-contained HTML page, its figures, its errors, and a real browser rendering it."""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
from html import escape
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest
from support import read_samples, require, samples_path
from typer.testing import CliRunner

from rueval.cli import app
from rueval.report.leaderboard import format_score

CHROMIUM = Path("/usr/bin/chromium")
# A model name and a slice bucket that would break the page or a plot if not escaped.
HOSTILE_MODEL = '<script>alert("x")</script> & tiny-lm'
HOSTILE_BUCKET = "$100 & <i>цена</i>"
OPTIONAL_FIGURES = {"fewshot", "attacks", "slices-rcb"}
ALWAYS_FIGURES = {"scores-rsg", "scores-tape", "lidirus", "industrial", "industrial-tasks"}


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def with_optional_sections(results: dict) -> dict:
    """A copy of a real results.json carrying every section other commands add: confidence
    intervals, industrial figures, few-shot curves, several prompts, perturbations and slices."""
    r = copy.deepcopy(results)
    r["model"] = HOSTILE_MODEL
    r["industrial"] = {
        "examples_per_s": 812.5,
        "latency_ms_per_example": 1.23,
        "peak_rss_mb": 912.0,
        "model_size_mb": 48.3,
        "parameters": 12_600_000,
    }
    for name, task in r["tasks"].items():
        task["industrial"] = {"examples_per_s": 700.0, "latency_ms_per_example": 1.0 + len(name) / 10}
        task["ci"] = {m: [v - 12, v + 9] for m, v in task["metrics"].items()}
        task["ci"]["score"] = [task["score"] - 10, task["score"] + 8]
    for name, means in {"winograd": (55, 60, 63), "ru_openbook": (30, 34, 41)}.items():
        task = r["tasks"][name]
        task["shots"] = {
            str(k): {
                "metrics": {m: mean + i for i, m in enumerate(task["metrics"])},
                "std": {m: 2.0 + k for m in task["metrics"]},
                "episodes": [{m: mean + e for m in task["metrics"]} for e in (-1, 0, 1)],
            }
            for k, mean in zip((0, 1, 4), means)
        }
    winograd = r["tasks"]["winograd"]  # scored under four prompts (--prompts all): mean 55, std 5
    winograd["prompts"] = {
        "variants": [{"score": s, "metrics": dict.fromkeys(winograd["metrics"], s)} for s in (50, 60) * 2]
    }
    for name in ("winograd", "chegeka"):
        task = r["tasks"][name]
        task["perturbations"] = {
            perturbation: {"metrics": dict(task["metrics"]), "score": task["score"], "asr": asr, "n": 20}
            for perturbation, asr in (("butter_fingers", 37.5), ("emojify", 12.0), ("eda_delete", 25.0))
        }
    r["tasks"]["rcb"]["slices"] = {
        "length": {"1-10 words": {"n": 4, "macro_f1": 30.0, "accuracy": 50.0}, "21+ words": {"n": 2}},
        "domain": {
            "новости": {"n": 12, "macro_f1": 35.0, "accuracy": 41.0},
            HOSTILE_BUCKET: {"n": 8, "accuracy": 30.0},
        },
    }
    return r


@pytest.fixture(scope="module")
def runs(sample_runs, tmp_path_factory) -> dict[str, Path]:
    """Two real runs on the bundled samples, and a third carrying every optional section."""
    synthetic = tmp_path_factory.mktemp("synthetic") / "tiny-lm"
    synthetic.mkdir()
    majority = json.loads((sample_runs["majority"] / "results.json").read_text(encoding="utf-8"))
    (synthetic / "results.json").write_text(json.dumps(with_optional_sections(majority)), encoding="utf-8")
    return {**sample_runs, "synthetic": synthetic}


@pytest.fixture(scope="module")
def full_report(runs, tmp_path_factory) -> Path:
    """The report on all three runs, figures in a folder given with --assets."""
    out = tmp_path_factory.mktemp("report") / "report.html"
    dirs = (runs["majority"], runs["weighted-random"], runs["synthetic"])
    result = invoke("report", *dirs, "-o", out, "--assets", out.parent / "figures")
    assert result.exit_code == 0, result.output
    return out


def rgb(image: np.ndarray) -> np.ndarray:
    """matplotlib's float RGB(A) image as 0-255 ints, alpha dropped."""
    return (image[..., :3] * 255).round().astype(np.int64)


def distinct_colours(pixels: np.ndarray) -> int:
    return np.unique(pixels[..., 0] << 16 | pixels[..., 1] << 8 | pixels[..., 2]).size


def embedded_images(html: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'<img [^>]*src="data:image/png;base64,([^"]+)"', html)]


def test_report_compares_two_real_runs_beside_the_papers(runs, tmp_path):
    out = tmp_path / "report.html"
    result = invoke("report", runs["majority"], runs["weighted-random"], "-o", out)
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    for model in ("majority", "weighted-random"):
        total = json.loads((runs[model] / "results.json").read_text(encoding="utf-8"))["rsg_total"]
        assert re.search(rf"<b>{model}|>{model}<", html)
        assert f">{format_score(total)}<" in html  # the run's RSG total, in the runs table and the board
    # The papers' rows, cited: RSG Table 2's RuBERT total and TAPE Table 3's human average.
    assert "Shavrina et al. (2020), Table 2" in html and ">54.6<" in html
    assert "Taktasheva et al. (2022), Table 3" in html and "78.1&nbsp;/ 76.2" in html
    # Default figure folder: <report>.assets beside the page; only the sections these runs have data for.
    figures = {p.stem for p in (tmp_path / "report.assets").glob("*.png")}
    assert figures == ALWAYS_FIGURES
    assert 'id="fewshot"' not in html and 'id="robustness"' not in html and 'id="slices"' not in html
    assert 'id="lidirus"' in html and 'id="industrial"' in html


def test_report_draws_every_optional_section(full_report):
    html = full_report.read_text(encoding="utf-8")
    figures = {p.stem: p for p in (full_report.parent / "figures").glob("*.png")}
    assert set(figures) == ALWAYS_FIGURES | OPTIONAL_FIGURES
    for path in figures.values():
        pixels = rgb(matplotlib.image.imread(path))
        assert pixels.shape[0] > 200 and pixels.shape[1] > 800
        assert distinct_colours(pixels) > 10  # drawn, not blank
    for section in ("fewshot", "robustness", "slices", "lidirus", "industrial"):
        assert f'id="{section}"' in html
    assert ">37.5<" in html  # butter_fingers' attack success rate, in the robustness table
    assert "55.0&nbsp;±2.0" in html  # the k=0 Winograd mean ± std, in the TAPE board
    assert '<span class="ci">4 prompts: 55.0&nbsp;±5.0</span>' in html  # over Winograd's prompts, per-task table
    assert '<span class="ci">[' in html  # confidence intervals in the per-task table
    assert ">12,600,000<" in html  # parameters, in the industrial table


def test_report_page_is_self_contained_and_escaped(full_report):
    html = full_report.read_text(encoding="utf-8")
    assert "<script" not in html and "<link" not in html and "url(" not in html
    assert not re.search(r'(src|href)="(?!data:image/png;base64,|#)', html)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; tiny-lm" in html
    # Every figure is embedded, byte for byte the PNG saved beside the page.
    saved = sorted(p.read_bytes() for p in (full_report.parent / "figures").glob("*.png"))
    assert sorted(embedded_images(html)) == saved


def write_results(run_dir: Path, text: str) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(text, encoding="utf-8")
    return run_dir


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "no results.json"),
        ('{"model": "x",\n "tasks": {', "results.json:2: not valid JSON"),
        ('{"tasks": {}}', "field 'model': missing"),
        ('{"model": "x", "tasks": {}}', "field 'tasks': is empty"),
        (
            '{"model": "x", "tasks": {"rcb": {"metrics": {"accuracy": "high"}, "score": 1, "n": 2}}}',
            "field 'tasks.rcb.metrics.accuracy': expected a number",
        ),
        ('{"model": "x", "tasks": {"nli": {"metrics": {}, "score": 1, "n": 2}}}', "field 'tasks.nli': unknown task"),
        # a NaN or an infinity is no score: refused, never shown as "nan"
        (
            '{"model": "x", "tasks": {"rcb": {"metrics": {}, "score": NaN, "n": 2}}}',
            "'tasks.rcb.score': expected a number, got nan",
        ),
        (
            '{"model": "x", "tasks": {"rcb": {"metrics": {"accuracy": Infinity}, "score": 1, "n": 2}}}',
            "field 'tasks.rcb.metrics.accuracy': expected a number, got inf",
        ),
        (
            '{"model": "x", "tasks": {"rcb": {"metrics": {}, "score": 1, "n": 2, "ci": {"accuracy": [1]}}}}',
            "field 'tasks.rcb.ci.accuracy': expected two numbers, the low and high bounds",
        ),
        (  # an earlier rueval named Ethics' binary F1 "f1", as it named span tasks' token F1
            '{"model": "x", "tasks": {"sit_ethics": {"metrics": {"f1": 0, "accuracy": 50}, "score": 25, "n": 2}}}',
            "field 'tasks.sit_ethics.metrics': has f1, accuracy, but sit_ethics is scored by binary_f1, accuracy",
        ),
    ],
)
def test_report_rejects_a_bad_run_directory(runs, tmp_path, text, message):
    bad = tmp_path / "bad"
    if text is None:
        bad.mkdir()
    else:
        write_results(bad, text)
    out = tmp_path / "report.html"
    result = invoke("report", runs["majority"], bad, "-o", out)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.slow  # starts a browser
def test_report_renders_in_headless_chromium(full_report, tmp_path):
    require(CHROMIUM.exists(), "needs Chromium: apt-get install -y chromium (.ci/run installs it)")
    screenshot = tmp_path / "page.png"
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
    flags += " --disable-component-update --disable-sync --window-size=1280,3000"
    command = [
        str(CHROMIUM),
        *flags.split(),
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={screenshot}",
        full_report.resolve().as_uri(),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=180)
    pixels = rgb(matplotlib.image.imread(screenshot))
    assert pixels.shape[:2] == (3000, 1280)
    non_white = (pixels < 245).any(axis=-1).mean()
    colours = distinct_colours(pixels)
    assert non_white > 0.05 and colours > 100, (non_white, colours)

    def share_of(rgb: tuple[int, int, int]) -> float:
        return (np.abs(pixels - rgb).max(axis=-1) <= 6).mean()

    assert share_of((0xFF, 0xF6, 0xD6)) > 0.002  # the highlighted run rows of the leaderboard tables
    assert share_of((0x1F, 0x77, 0xB4)) > 0.002  # the first run's bars in the RSG score figure


# ---- the per-example view of sample logs (--log-samples) ---------------------------------------------------

HOSTILE_PREMISE = 'Лёд <b>таял</b> & "<script>alert(1)</script>"'
GREEN, RED = (0x3A, 0x9D, 0x5D), (0xD0, 0x47, 0x3C)  # the right and wrong examples' border colours


@pytest.fixture(scope="module")
def logged_run(tiny_gpt2_dir, tmp_path_factory) -> Path:
    """A tiny model's run with sample logs on a choice task (one premise hostile HTML) and a generation task."""
    from rueval.data.local import SAMPLES_DIR
    from rueval.tasks.prompts import PROMPTS

    base = tmp_path_factory.mktemp("logged")
    data = base / "data"
    shutil.copytree(SAMPLES_DIR, data)
    val = data / "PARus" / "val.jsonl"
    records = [json.loads(line) for line in val.read_text(encoding="utf-8").splitlines()]
    records[0]["premise"] = HOSTILE_PREMISE
    val.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUEVAL_CACHE_DIR", str(base / "cache"))
        patch.setattr(PROMPTS["multiq"], "max_new_tokens", (3, 3))
        args = ("run", "-m", f"hf:{tiny_gpt2_dir}", "-t", "parus,multiq", "--data", data, "--limit", "8")
        result = invoke(*args, "--log-samples", "-o", base / "run")
    assert result.exit_code == 0, result.output
    return base / "run"


@pytest.fixture(scope="module")
def examples_report(logged_run, runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("examples") / "report.html"
    result = invoke("report", runs["majority"], logged_run, "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_report_shows_every_logged_example_with_its_prompt_and_option_scores(logged_run, examples_report):
    html = examples_report.read_text(encoding="utf-8")
    view = html[html.index('<section id="examples">') :]
    parus, multiq = read_samples(logged_run, "parus"), read_samples(logged_run, "multiq")
    assert view.count('<details class="sample') == len(parus) + len(multiq)  # the majority run logged nothing
    right = sum(line["correct"] for line in parus)
    assert f">all ({len(parus)})<" in view and f">right ({right})<" in view
    assert f">wrong ({len(parus) - right})<" in view
    for line in parus:
        for argument, response in zip(line["arguments"].values(), line["resps"]):
            assert f"<td>{float(response[0][0]):.3f}</td>" in view  # every option's log-likelihood
            assert escape(repr(argument["arg_1"])) in view
    assert escape(multiq[0]["arguments"]["gen_args_0"]["arg_0"]) in view  # the generation prompt
    assert escape(HOSTILE_PREMISE) in view and HOSTILE_PREMISE not in html
    assert "<script" not in html and not re.search(r'(src|href)="(?!data:image/png;base64,|#)', html)


def test_report_rejects_a_malformed_sample_log(logged_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(logged_run, run)
    log = samples_path(run, "parus")
    lines = log.read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[1])
    del broken["filtered_resps"]
    log.write_text("\n".join([lines[0], json.dumps(broken), *lines[2:]]) + "\n", encoding="utf-8")
    result = invoke("report", run, "-o", tmp_path / "report.html")
    assert result.exit_code == 2 and f"{log.name}:2: field 'filtered_resps': missing" in result.output
    assert not (tmp_path / "report.html").exists()


def screenshot(page: str, tmp_path: Path, name: str) -> np.ndarray:
    shot = tmp_path / f"{name}.png"
    flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
    # a window taller than the page: the anchor then scrolls nothing (headless screenshots ignore scrolling)
    flags += " --disable-component-update --disable-sync --window-size=1280,12000"
    command = [str(CHROMIUM), *flags.split(), f"--user-data-dir={tmp_path / name}", f"--screenshot={shot}", page]
    subprocess.run(command, check=True, capture_output=True, timeout=180)
    return rgb(matplotlib.image.imread(shot))


@pytest.mark.slow  # starts a browser
def test_the_right_wrong_filter_works_in_headless_chromium(logged_run, tmp_path):
    require(CHROMIUM.exists(), "needs Chromium: apt-get install -y chromium (.ci/run installs it)")
    parus = read_samples(logged_run, "parus")
    assert 0 < sum(line["correct"] for line in parus) < len(parus), "the view needs right and wrong examples"
    run = tmp_path / "run"  # the run with PARus's log alone: the one block on the page is the filtered one
    shutil.copytree(logged_run, run)
    samples_path(run, "multiq").unlink()
    report = tmp_path / "report.html"
    assert invoke("report", run, "-o", report).exit_code == 0
    page = report.resolve().as_uri()

    def has(pixels: np.ndarray, colour: tuple[int, int, int]) -> bool:
        return bool((np.abs(pixels - colour).max(axis=-1) <= 6).sum() > 40)

    everything = screenshot(f"{page}#samples-0-all", tmp_path, "all")
    assert has(everything, GREEN) and has(everything, RED)
    only_right = screenshot(f"{page}#samples-0-right", tmp_path, "right")
    assert has(only_right, GREEN) and not has(only_right, RED)
    only_wrong = screenshot(f"{page}#samples-0-wrong", tmp_path, "wrong")
    assert has(only_wrong, RED) and not has(only_wrong, GREEN)
