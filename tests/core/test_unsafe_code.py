"""Model-written code runs only with consent, each program in a subprocess of its own: its tests'
results as MERA's harness takes them, a program that loops killed by the timeout, one that allocates
too much stopped by the memory limit, and no network where unshare can take it away."""

from __future__ import annotations

import time

import pytest

from rueval.core import unsafe_code
from rueval.core.errors import RuevalError
from rueval.core.unsafe_code import CONSENT_FLAG, TIMEOUT_SECONDS, Program, allowed, run_program

TESTS = "[{'a': 1, 'b': 2}, {'a': 'x', 'b': 'y'}, {'a': 1, 'b': 'y'}]"


def program(body: str, tests: str = TESTS, count: int = 3) -> Program:
    return Program(f"def f(a, b):\n{body}", "f", tests, count)


def test_without_consent_no_program_runs_and_the_error_names_the_flag(tmp_path):
    marker = tmp_path / "ran"
    with pytest.raises(RuevalError, match=CONSENT_FLAG):
        run_program(Program(f"open({str(marker)!r}, 'w').close()\ndef f(): pass\n", "f", "[{}]", 1), "ruHumanEval")
    with allowed(False), pytest.raises(RuevalError, match=CONSENT_FLAG):
        run_program(program("    return a + b\n"), "ruHumanEval")
    assert not marker.exists()


def test_each_tests_result_is_the_text_of_what_the_call_returned_none_where_it_failed():
    with allowed(True):
        assert run_program(program("    return a + b\n"), "t") == ["3", "xy", None]  # 1 + "y" raises
        assert run_program(program("    print('noise')\n    return None\n"), "t") == [None, None, None]
        assert run_program(program("    return a +\n"), "t") == [None, None, None]  # does not compile
        assert run_program(program("    return [a, b]\n", "[{'a': (1,), 'b': {2}}]", 1), "t") == ["[(1,), {2}]"]


def test_a_program_that_never_ends_is_killed_by_the_timeout():
    with allowed(True):
        started = time.perf_counter()
        assert run_program(program("    while True:\n        pass\n"), "t") == [None, None, None]
        assert time.perf_counter() - started < TIMEOUT_SECONDS + 3


def test_a_program_that_allocates_past_the_limit_is_stopped_by_it():
    too_much = unsafe_code.MEMORY_BYTES * 2
    with allowed(True):
        assert run_program(program(f"    x = bytearray({too_much})\n    return 1\n"), "t") == [None, None, None]
        assert run_program(program("    x = bytearray(2**20)\n    return len(x)\n"), "t") == [str(2**20)] * 3


def test_a_program_runs_in_a_fresh_temporary_folder_without_the_users_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RUEVAL_SECRET", "s3cret")
    monkeypatch.chdir(tmp_path)
    body = "    import os\n    return os.getcwd() + '|' + os.environ.get('RUEVAL_SECRET', '-')\n"
    with allowed(True):
        (result,) = run_program(program(body, "[{'a': 0, 'b': 0}]", 1), "t")
    folder, secret = result.split("|")
    assert secret == "-" and folder != str(tmp_path) and "rueval-code-" in folder


@pytest.mark.skipif(not unsafe_code.network_block(), reason="unshare cannot take the network away here")
def test_a_program_has_no_network():
    body = "    import socket\n    return socket.if_nameindex()\n"  # only the loopback device in its namespace
    with allowed(True):
        (names,) = run_program(program(body, "[{'a': 0, 'b': 0}]", 1), "t")
    assert names is not None and "'lo'" in names and "eth" not in names
    assert "no network" in unsafe_code.warning() and "NOT in a sandbox" in unsafe_code.warning()
