"""The cases of benchmarks/hostile_sweep.py, by issue 27's groups (a module each, in the table's order):
ids, numbers from outside, run directories, unbounded inputs, simple bad values (the command line and
the Python API), the smaller wrong answers, the leaderboard service's commands; then issue 35's: code
and bombs in templates (templates), and the issue's cases one by one (round3: the command line and
the API; round3_board: the leaderboard service). Each case prepares its folder and returns its
command; its checks say what a right result is (or that nothing was written beside a refusal)."""

from hostile_cases import bounds, ids, numbers, round3, round3_board, rundir, serve, smaller, templates, values  # noqa: F401
from hostile_cases.common import CASES, GROUPS

CASES.sort(key=lambda case: GROUPS.index(case.group))  # the order, each group's cases as declared

__all__ = ["CASES"]
