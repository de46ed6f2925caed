from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_test_command_written_in_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = readme.split("```")
    commands = [line.strip() for line in blocks[1].splitlines()[1:] if line.strip() and not line.startswith("#")]
    install_and_demo, test_command = commands[0], commands[1]
    assert install_and_demo == "pip install -e . && rueval run"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
