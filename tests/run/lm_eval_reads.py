"""lm-evaluation-harness's own code reading a rueval run folder, in lm-eval's virtualenv (run by
tests/run/test_lm_eval_reads.py): `get_sample_results_filenames` and `get_results_filenames` over the
folder's files, `get_file_task_name` on each sample log, then `WandbLogger` (offline) given
results_lmeval.json and the sample lines. Usage: python lm_eval_reads.py RUN_DIR WANDB_DIR; prints
what lm-eval found as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lm_eval.loggers import WandbLogger
from lm_eval.utils import get_file_task_name, get_results_filenames, get_sample_results_filenames


def in_memory(line: dict) -> dict:
    """A line as lm-eval holds it before writing: its files (and rueval's) keep each request's arguments as
    {"gen_args_0": {"arg_0": ..., "arg_1": ...}}, its loggers take them as lists."""
    return {**line, "arguments": [list(args.values()) for args in line.get("arguments", {}).values()]}


def main() -> None:
    run, wandb_dir = Path(sys.argv[1]), sys.argv[2]
    files = [str(path) for path in sorted(run.rglob("*")) if path.is_file()]
    sample_files = get_sample_results_filenames(files)
    tasks = {get_file_task_name(Path(name).name): name for name in sample_files}
    results = json.loads((run / "results_lmeval.json").read_text(encoding="utf-8"))
    logger = WandbLogger(init_args={"mode": "offline", "dir": wandb_dir, "project": "rueval"})
    logger.post_init(results)
    logger.log_eval_result()
    samples = {
        task: [in_memory(json.loads(line)) for line in Path(name).read_text(encoding="utf-8").splitlines()]
        for task, name in tasks.items()
    }
    logger.log_eval_samples(samples)
    logger.run.finish()
    print(json.dumps({"tasks": sorted(tasks), "results_files": get_results_filenames(files)}))


if __name__ == "__main__":
    main()
