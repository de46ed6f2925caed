import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_test_command_written_in_readme():
    blocks = README.split("```")
    commands = [line.strip() for line in blocks[1].splitlines()[1:] if line.strip() and not line.startswith("#")]
    install_and_demo, test_command = commands[0], commands[1]
    assert install_and_demo == "pip install -e . && rueval run"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci


def test_readme_stays_a_short_start_and_leaves_the_rest_to_the_docs():
    assert len(README.splitlines()) < 250


def test_every_file_readme_links_to_exists():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [target for target in targets if "://" not in target]
    assert "docs/getting-started.md" in local
    assert [target for target in local if not (ROOT / target).is_file()] == []
