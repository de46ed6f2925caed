"""Work in a daemon thread of its own, its result or its error handed to a Future; large libraries'
first import in a process that ends with its command, without the cyclic collector walking what it builds."""

import json
import subprocess
import sys
import threading

import pytest

from rueval.core.background import in_background


def test_work_in_the_background_hands_its_result_or_its_error_to_the_future():
    ran = in_background(lambda: (threading.current_thread().name, threading.current_thread().daemon), "rueval-test")
    assert ran.result(timeout=30) == ("rueval-test", True)  # a daemon: a failed run does not wait for it

    def fails() -> None:
        raise ValueError("no such file")

    with pytest.raises(ValueError, match="no such file"):
        in_background(fails, "rueval-test").result(timeout=30)


# imports a large pure-Python module with the collector at its most eager, with or without freeze_imports(),
# then imports it again after making more objects; reports the collections while the module was imported
# (in sys.modules, nothing frozen yet) and what gc froze
IMPORTING = """
import gc, json, sys
from rueval.core.memory import freeze_imports, import_libraries
if sys.argv[1] == "frozen":
    freeze_imports()
gc.set_threshold(10)
collections = []
def started(phase, info):
    if phase == "start":
        collections.append("_pydecimal" in sys.modules and not gc.get_freeze_count())
gc.callbacks.append(started)
import_libraries("_pydecimal", "fractions")
during, frozen = collections.count(True), gc.get_freeze_count()
made = [{"n": n} for n in range(1000)]
import_libraries("_pydecimal")
print(json.dumps({"collections": during, "frozen": frozen, "again": gc.get_freeze_count(), "on": gc.isenabled()}))
"""


def imported(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", IMPORTING, mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_a_command_s_first_import_of_large_libraries_is_frozen_out_of_the_collector_s_way():
    plain, frozen = imported("plain"), imported("frozen")
    assert plain["collections"] > 0 and plain["frozen"] == plain["again"] == 0 and plain["on"]
    assert frozen["collections"] == 0 and frozen["on"]
    assert frozen["frozen"] > 1000  # the module's functions, classes and constants
    assert frozen["again"] == frozen["frozen"]  # modules already imported: nothing made since is frozen
