"""No traceback for any value a user can type: every option of `rueval run`, `submit` and `perturb`
swept with bad values (negative, zero, NaN, infinite, huge, a word where a number goes, empty) ends in
the run's result or in one line on stderr with exit code 2 and nothing written; `rueval.evaluate`
refuses what the command line refuses, with the same one line."""

from __future__ import annotations

import math

import pytest
from typer.main import get_command

import rueval
from rueval.cli import app
from rueval.core.errors import RuevalError

BAD = ("", "x", "-1", "0", "nan", "inf", "1e400", "99999999999", "1,,x")
# how a call runs and shows (swept elsewhere), and the names of models to download (no test reaches the network)
SKIPPED = {"help", "out", "resume", "force", "quiet", "verbose", "filter_model", "translation_model", "addsent_model"}
# each command with the arguments that make it run on the bundled samples, quickly
COMMANDS = {
    "run": ("-m", "majority", "-t", "parus", "--limit", "3"),
    "submit": ("-m", "majority"),
    "perturb": ("-t", "winograd", "--perturbations", "change_char_case", "--limit", "2"),
}


def value_options(command: str) -> list[str]:
    """The options of a command that take a value, by their first spelling."""
    params = get_command(app).commands[command].params
    return [p.opts[0] for p in params if p.name not in SKIPPED and not getattr(p, "is_flag", False) and p.opts]


def sweep(command: str) -> list[tuple[str, str]]:
    return [(option, value) for option in value_options(command) for value in BAD]


def check_outcome(result, written) -> None:
    assert "Traceback" not in result.output + result.stderr
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("error: "), result.stderr
        assert sum(line.startswith("error: ") for line in lines) == 1 and all(
            line.startswith(("error: ", "warning: ", "note: ")) for line in lines
        ), result.stderr
        assert not written.exists() or not any(written.iterdir())


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_with_bad_values_ends_in_a_result_or_one_line_and_nothing_written(cli, tmp_path, command):
    for n, (option, value) in enumerate(sweep(command)):
        out = tmp_path / f"out{n}"
        target = out / "submission.zip" if command == "submit" else out
        result = cli(command, *COMMANDS[command], option, value, "-o", target)
        try:
            check_outcome(result, out)
        except AssertionError:
            pytest.fail(f"rueval {command} {option} {value!r}: exit {result.exit_code}\n{result.output}")


def test_a_fine_tuning_option_out_of_range_is_one_line_before_any_training(cli, tmp_path):
    """The sweep above gives them to majority, which refuses them by name: here to the model they belong to."""
    for option, value in (("--ft-seed", "-1"), ("--ft-epochs", "inf"), ("--ft-lr", "inf"), ("--ft-lr", "nan")):
        result = cli("run", "-m", "finetune:some/encoder", "-t", "parus", option, value, "-o", tmp_path / "out")
        assert result.exit_code == 2, (option, value, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "fine-tuning option" in result.stderr or option in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unknown_option_or_a_word_for_a_number_is_one_line_not_a_usage_box(cli, tmp_path):
    for args, said in (
        (("--sed", "1"), "error: No such option: --sed"),
        (("--seed", "x"), "error: Invalid value for '--seed'"),
        (("--episodes", "0"), "error: Invalid value for '--episodes'"),
    ):
        result = cli("run", *args, "-o", tmp_path / "out")
        assert result.exit_code == 2
        assert result.stderr.startswith(said) and result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.rstrip().endswith("(see root run --help)")
    assert not (tmp_path / "out").exists()


API_BAD = [
    ({"tasks": 123}, "--tasks: expected a name or a list of names, got 123"),
    ({"tasks": [1]}, "--tasks: expected a name or a list of names"),
    ({"limit": "10"}, "--limit 10: expected a whole number of records, or a share between 0 and 1"),
    ({"limit": math.nan}, "--limit nan: expected a whole number"),
    ({"limit": math.inf}, "--limit inf: expected a whole number"),
    ({"limit": True}, "--limit True: expected a whole number"),
    ({"seed": "x"}, "--seed: expected a number, got 'x'"),
    ({"seed": -1}, "--seed -1: expected a whole number from 0 to 4294967295"),
    ({"seed": 2**70}, "--seed 1180591620717411303424: expected a whole number from 0"),
    ({"seed": 1.5}, "--seed: expected a whole number, got 1.5"),
    ({"shots": "abc"}, "--shots: expected a number, got 'abc'"),
    ({"shots": [-1]}, "--shots -1: expected one or more non-negative numbers"),
    ({"shots": 3}, "--shots and --episodes need a language model"),
    ({"episodes": 0}, "--episodes 0: expected a whole number from 1 to 1000"),
    ({"episodes": 10**9}, "--episodes 1000000000: expected a whole number from 1 to 1000"),
    ({"episodes": "2"}, "--episodes: expected a number, got '2'"),
    ({"split": "train"}, "--split train: expected one of val, test"),
    ({"split": 5}, "--split: expected str or null, got 5"),
    ({"data": 5}, "--data 5: expected a folder, a zip file, or hf"),
    ({"data": ""}, "--data '': expected a folder, a zip file, or hf"),
    ({"log_samples": "yes"}, "--log-samples: expected true or false, got 'yes'"),
    ({"force": "yes"}, "out: expected a folder's path, and force true or false"),
    ({"out": 5}, "out: expected a folder's path, and force true or false"),
    ({"batch_size": -3}, "batch_size: majority is no language model"),  # the API names options as it takes them
    ({"model": "hf:some/model", "batch_size": -3}, "--batch-size -3: expected a positive number or auto"),
    ({"model": "hf:some/model", "gen_kwargs": 5}, "--gen_kwargs: expected key=value,... or a mapping of them, got 5"),
    ({"model": "hf:some/model", "gen_kwargs": "temperature=nan"}, "--gen_kwargs temperature=nan: expected 0 or more"),
    ({"model": 5}, "model: expected a spec, a LanguageModel, or a transformers model with tokenizer=, got int"),
    ({"model": "hf:some/model", "system_instruction": 5}, "--system-instruction: expected str or null, got 5"),
    (
        {"model": "hf:some/model", "apply_chat_template": "yes"},
        "--apply-chat-template: expected true or false, got 'yes'",
    ),
    ({"model": "hf:some/model", "revision": 5}, "--revision: expected str or null, got 5"),
    ({"model": "hf:some/model", "concurrency": 0}, "--concurrency 0: expected a whole number from 1"),
    ({"log_samples": True, "out": None}, "log_samples: the sample logs are written to OUT/samples/; give out="),
    ({"model": "finetune:some/encoder", "ft_seed": -1}, "fine-tuning option seed=-1 is out of range: expected a whole"),
    ({"model": "finetune:some/encoder", "ft_epochs": math.inf}, "fine-tuning option epochs=inf is out of range"),
    ({"model": "finetune:some/encoder", "ft_lr": "abc"}, "fine-tuning option lr='abc' is out of range"),
]


@pytest.mark.parametrize(("arguments", "said"), API_BAD, ids=[str(arguments) for arguments, _ in API_BAD])
def test_evaluate_refuses_a_bad_argument_in_one_line_and_writes_nothing(tmp_path, arguments, said):
    out = tmp_path / "out"
    with pytest.raises(RuevalError) as caught:
        rueval.evaluate(**{"model": "majority", "tasks": "parus", "out": out, **arguments})
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)
    assert not out.exists()


def test_evaluate_refuses_what_the_command_line_refuses(cli, tmp_path):
    """The same values, the same line: both build the one RunSpec."""
    for arguments, flags in (
        ({"split": "train"}, ("--split", "train")),
        ({"seed": 2**40}, ("--seed", str(2**40))),
        ({"limit": math.inf}, ("--limit", "inf")),
        ({"episodes": 5000, "shots": 0}, ("--episodes", "5000")),
    ):
        with pytest.raises(RuevalError) as caught:
            rueval.evaluate("majority", tasks="parus", **arguments)
        result = cli("run", "-m", "majority", "-t", "parus", *flags, "-o", tmp_path / "out")
        assert result.exit_code == 2
        if "Invalid value" not in result.stderr:  # click refuses some values before any spec: its own words
            assert result.stderr == f"error: {caught.value}\n"


def test_every_command_that_reads_a_run_folder_refuses_an_unusable_name_in_one_line(cli, tmp_path):
    too_long = tmp_path / ("a" * 300)
    for command in (
        ("compare", too_long, too_long),
        ("report", too_long),
        ("leaderboard", too_long),
        ("export", too_long),
    ):
        result = cli(*command, "-o", tmp_path / "out")
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "File name too long" in result.stderr or "not a directory" in result.stderr


def test_an_empty_data_option_is_refused_by_every_command_that_reads_data(cli, tmp_path):
    """Read as the current folder, it would look for the tasks there."""
    for command in (("run", "-t", "parus"), ("audit", "-t", "parus"), ("heuristics", "-t", "parus"), ("submit",)):
        result = cli(*command, "--data", "", *(("-o", tmp_path / "out") if command[0] != "heuristics" else ()))
        assert result.exit_code == 2 and result.stderr == "error: --data '': expected a folder, a zip file, or hf\n"
    assert not (tmp_path / "out").exists()
