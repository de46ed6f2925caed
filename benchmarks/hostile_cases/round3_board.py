"""The sweep's cases of issue 35 (round 3) against the leaderboard service, started as `rueval serve` on the
bundled samples' gold (20 items a task): what it publishes of a submission, bad tokens with a team's real
key, half-sent uploads, a full or read-only store, reads under another process's write lock, a killed
worker, and an upload giving a key twice. Only what is quick and bounded: the full-scale floods are a
benchmark of their own."""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from hostile_cases.common import case, need_root
from hostile_cases.harness import ERROR, OK, TESTS, CaseDir, Outcome, Skip, rueval, run_command
from hostile_cases.round3 import twice
from hostile_cases.rundir import full_disk

# What the board may publish (issue 35, "What to build" 2): adjust here when the rules are settled.
PRINTED_DECIMALS = 1  # every public number as the board prints it (the papers' tables: one decimal)
MIN_N = 100  # fewer test items: no p-value, no mark, no subset score (`rueval serve --min-n`'s default)
TIMES = {"created", "finished"}  # numbers that are no score: when a submission came and was scored
MARKS = {"p_value", "distinguishable"}  # a comparison's test, and the mark it gives


def board(c: CaseDir, store: Path | None = None) -> tuple[Any, str]:
    """`rueval serve` on the shared gold (stopped after the case) and a team's API token."""
    sys.path.insert(0, str(TESTS / "serve"))
    from board_support import Server

    store = store or c / "store"
    added = c.rueval("serve-admin", "add-team", "alpha", "--store", store)
    server = Server(c.shared.gold(), store)
    c.cleanups.append(server.stop)
    return server, added.stdout.strip().splitlines()[-1]


def submit(c: CaseDir, server: Any, token: str, model: str = "heuristic", *more: str) -> list[str]:
    to = ("--to", server.url, "--token", token)
    return rueval("submit", "-m", model, "--data", c.shared.gold(), "-o", c / "sub.zip", *to, *more)


def too_precise(value: Any, where: str = "") -> list[str]:
    """Every number in a JSON answer printed with more decimals than the board's, by its path."""
    if isinstance(value, dict):
        return [p for key, item in value.items() if key not in TIMES for p in too_precise(item, f"{where}.{key}")]
    if isinstance(value, list):
        return [p for n, item in enumerate(value) for p in too_precise(item, f"{where}[{n}]")]
    if isinstance(value, float) and abs(value * 10**PRINTED_DECIMALS - round(value * 10**PRINTED_DECIMALS)) > 1e-6:
        return [f"{where.lstrip('.')} {value!r}"]
    return []


def below_min_n(submission: dict, rows: list[dict]) -> list[str]:
    """What the API publishes of tasks and subsets with fewer than MIN_N items: marks, p-values, scores."""
    found = []
    for task, scored in submission["tasks"].items():
        small = scored["n"] < MIN_N
        for other, versus in (scored.get("versus") or {}).items():
            found += [f"{task} versus {other}: {key}" for key in MARKS & versus.keys() if small]
        rules = scored.get("rules") or {}
        if rules.get("unfired_score") is not None and min(scored["n"], rules.get("unfired", 0)) < MIN_N:
            found.append(f"{task}: the score where no rule fires, on {rules.get('unfired')} items")
        for subset, numbers in (scored.get("breakdown") or {}).items():
            if numbers.get("n", 0) < MIN_N and set(numbers) - {"n"}:
                found.append(f"{task}: subset {subset!r}'s score on {numbers.get('n')} items")
    for row in rows:
        marked = {task: others for task, others in (row.get("not_distinguishable_from") or {}).items() if others}
        small = [task for task in marked if submission["tasks"].get(task, {}).get("n", 0) < MIN_N]
        found += [f"leaderboard row {row.get('id')}: a mark on {task}" for task in small]
    return found


def page_numbers(text: str) -> list[str]:
    """Numbers a page's tables show with more decimals than the board prints (its prose may cite p < 0.05)."""
    cells = " ".join(re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", text, flags=re.S | re.I))
    shown = html.unescape(re.sub(r"<[^>]+>", " ", cells))
    return re.findall(rf"-?\d+\.\d{{{PRINTED_DECIMALS + 1},}}", shown)


def published(server: Any, token: str) -> str | None:
    """What the API and the pages publish of submission 1, against the rules above."""
    import httpx

    with httpx.Client(base_url=server.url, timeout=120, headers={"authorization": f"Bearer {token}"}) as client:
        submission = client.get("/api/submissions/1").json()
        if submission.get("status") != "done":
            return f"submission 1 is {submission.get('status')}: {submission.get('error')}"
        board = client.get("/api/leaderboard").json()
        pages = {path: client.get(path).text for path in ("/", "/submissions/1")}
    found = too_precise(submission, "submission") + too_precise(board, "leaderboard")
    found += below_min_n(submission, board.get("rows", []))
    found += [f"page {path} shows {number}" for path, text in pages.items() for number in page_numbers(text)[:3]]
    return f"{len(found)} published: " + "; ".join(found[:6]) if found else None


for model in ("heuristic", "majority"):

    @case("round3", f"board: a {model} submission on a 20-item gold publishes only printed numbers", OK,
          timeout=300)  # fmt: skip
    def _(c: CaseDir, model=model) -> list[str]:
        server, token = board(c)
        c.check(lambda o: published(server, token))
        return submit(c, server, token, model, "--public")


# Bad tokens with a real team's key: each must cost the board no more than a right one (which it may
# remember), and leave its pages as fast
BAD_TOKENS, SENDERS = 32, 8
SLOWER, SLACK_S = 3.0, 0.5  # the bad tokens' time against the right one's; GET / meanwhile against before
TIMED = """
import json, statistics, sys, threading, time
import httpx
url, right, bad, count, senders = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

def page():
    start = time.monotonic()
    httpx.get(url + "/", timeout=120)
    return time.monotonic() - start

def sent(token, pages):
    def send():
        with httpx.Client(base_url=url, timeout=120, headers={"authorization": f"Bearer {token}"}) as client:
            for _ in range(count // senders):
                client.get("/api/submissions/1")
    threads = [threading.Thread(target=send) for _ in range(senders)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        pages.append(page())
        time.sleep(0.05)
    return time.monotonic() - start

before = statistics.median(page() for _ in range(5))
right_s = sent(right, [])
during = [page()]
bad_s = sent(bad, during)
during = sorted(during)[int(0.9 * (len(during) - 1))]
print(json.dumps({"before": before, "during": during, "right_s": right_s, "bad_s": bad_s}))
"""


@case("round3", f"board: {BAD_TOKENS} bad secrets with a team's real key: as cheap as right ones, GET / as fast", OK,
      timeout=180)  # fmt: skip
def _(c: CaseDir) -> list[str]:
    server, token = board(c)
    bad = token[:-8] + ("A" * 8 if not token.endswith("A" * 8) else "B" * 8)  # the key kept, the secret wrong

    def as_fast(o: Outcome) -> str | None:
        timed = json.loads(o.stdout.strip().splitlines()[-1])
        tokens_bound, page_bound = SLOWER * timed["right_s"] + SLACK_S, SLOWER * timed["before"] + SLACK_S
        said = f"{BAD_TOKENS} bad tokens took {timed['bad_s']:.1f} s, right ones {timed['right_s']:.1f} s; GET / "
        said += f"{timed['before']:.2f} s before, {timed['during']:.2f} s meanwhile (90th percentile)"
        return said if timed["bad_s"] > tokens_bound or timed["during"] > page_bound else None

    c.check(as_fast)
    return [sys.executable, "-c", TIMED, server.url, token, bad, str(BAD_TOKENS), str(SENDERS)]


# Half-sent uploads, without a token: each dropped once the body-read timeout has passed
HALF_SENT, READ_TIMEOUT_S, GRACE_S = 6, 30.0, 15.0  # READ_TIMEOUT_S: `rueval serve --read-timeout`'s default
HALF = """
import json, socket, sys, time
import httpx
port, count, bound = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
head = ("POST /api/submissions HTTP/1.1\\r\\nHost: board\\r\\nContent-Type: multipart/form-data; boundary=x\\r\\n"
        "Content-Length: 100000\\r\\n\\r\\n--x\\r\\n")
connections = []
for n in range(count):  # half of them stop in the headers, half in the body
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall((head + "a" * 60 if n % 2 else head[:40]).encode())
    sock.settimeout(0.2)
    connections.append(sock)
start, dropped, answered = time.monotonic(), {}, []
page = httpx.get(f"http://127.0.0.1:{port}/", timeout=bound).status_code
while len(dropped) < count and time.monotonic() - start < bound:
    for n, sock in enumerate(connections):
        if n in dropped:
            continue
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            data = b""
        if data:
            answered.append(data.split(b"\\r\\n", 1)[0].decode(errors="replace"))
        else:
            dropped[n] = round(time.monotonic() - start, 1)
print(json.dumps({"page": page, "dropped": dropped, "open": count - len(dropped), "answers": answered}))
"""


@case("round3", f"board: {HALF_SENT} half-sent uploads dropped after the body-read timeout", OK, timeout=150)
def _(c: CaseDir) -> list[str]:
    server, _ = board(c)

    def dropped(o: Outcome) -> str | None:
        found = json.loads(o.stdout.strip().splitlines()[-1])
        if found["page"] != 200:
            return f"GET / answered {found['page']} meanwhile"
        bound = READ_TIMEOUT_S + GRACE_S
        return f"{found['open']} of {HALF_SENT} still open after {bound:g} s" if found["open"] else None

    c.check(dropped)
    return [sys.executable, "-c", HALF, str(server.port), str(HALF_SENT), str(READ_TIMEOUT_S + GRACE_S)]


# A full or read-only store: 503, no path named, and scoring again once it is writable
def read_only(c: CaseDir, folder: Path) -> tuple[list[str], list[str]]:
    """``folder`` made read-only (a read-only bind mount of itself: EROFS); the commands that undo it."""
    need_root()
    folder.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "--bind", str(folder), str(folder)]).returncode:
        raise Skip("cannot bind-mount here")
    c.cleanups.append(lambda: subprocess.run(["umount", "-l", str(folder)]))
    return ["mount", "-o", "remount,ro,bind", str(folder)], ["mount", "-o", "remount,rw,bind", str(folder)]


for fault in ("full", "read-only"):

    @case("round3", f"board: a {fault} store answers 503 naming no path", ERROR, "503", timeout=300)
    def _(c: CaseDir, fault=fault) -> list[str]:
        if fault == "full":
            store = full_disk(c, 16 * 1024)  # the store itself: its log and secret beside it, outside
            server, token = board(c, store)
            _fill(store / "filler")
            mend = ["rm", str(store / "filler")]
        else:
            store = c / "store"
            made, mend = read_only(c, store / "uploads")  # where an upload is written
            server, token = board(c, store)
            subprocess.run(made, check=True)

        def no_path_then_scores(o: Outcome) -> str | None:
            if str(store) in o.output:
                return f"the answer names the store's path {store}"
            subprocess.run(mend, check=True)
            again = run_command(submit(c, server, token, "majority"), c.path, c.env, 180)
            return None if again.returncode == 0 else f"once writable again: {again.error_line()}"

        c.check(no_path_then_scores)
        return submit(c, server, token, "majority")


def _fill(path: Path) -> None:
    """``path`` written until its disk is full."""
    with path.open("wb") as file:
        try:
            while True:
                file.write(b"\0" * 2**20)
                file.flush()
        except OSError:
            pass


# Scoring goes on: reads under another process's write lock, a worker killed
LOCKED_READ_S = 5.0  # a page read while another process holds SQLite's write lock
LOCKED = """
import json, sqlite3, sys, threading, time
import httpx
url, db = sys.argv[1:3]
lock = sqlite3.connect(db, isolation_level=None, timeout=30)
lock.execute("BEGIN IMMEDIATE")
read = {}
def get(path):
    start = time.monotonic()
    try:
        status = httpx.get(url + path, timeout=120).status_code
    except httpx.HTTPError as e:
        status = type(e).__name__
    read[path] = [status, round(time.monotonic() - start, 2)]
threads = [threading.Thread(target=get, args=(path,)) for path in ("/", "/api/leaderboard", "/submissions/1")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
lock.execute("ROLLBACK")
print(json.dumps(read))
"""


@case("round3", "board: pages read while another process holds the write lock", OK, timeout=150)
def _(c: CaseDir) -> list[str]:
    server, token = board(c)
    to = ("--to", server.url, "--token", token, "--public")
    c.rueval("submit", "-m", "majority", "--data", c.shared.gold(), "-o", c / "first.zip", *to)  # a page to read

    def at_once(o: Outcome) -> str | None:
        slow = {path: got for path, got in json.loads(o.stdout.strip().splitlines()[-1]).items()
                if got[0] != 200 or got[1] > LOCKED_READ_S}  # fmt: skip
        return f"under the lock (bound {LOCKED_READ_S:g} s): {slow}" if slow else None

    c.check(at_once)
    return [sys.executable, "-c", LOCKED, server.url, str(c / "store" / "board.sqlite3")]


RESTARTED_S = 60.0  # a killed worker restarted (with backoff) and the upload scored within
SCORED = """
import json, sys, time
import httpx
url, token, path, bound = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with httpx.Client(base_url=url, timeout=120, headers={"authorization": f"Bearer {token}"}) as client:
    sent = client.post("/api/submissions", files={"file": ("sub.zip", open(path, "rb").read())})
    start = time.monotonic()
    status = sent.status_code
    while status in (202, "queued", "scoring") and time.monotonic() - start < bound:
        time.sleep(0.5)
        status = client.get(f"/api/submissions/{sent.json()['id']}").json()["status"]
    print(json.dumps({"status": status, "seconds": round(time.monotonic() - start, 1)}))
"""


@case("round3", "board: a killed worker is restarted and the next upload scored", OK, timeout=150)
def _(c: CaseDir) -> list[str]:
    server, token = board(c)
    c.rueval("submit", "-m", "majority", "--data", c.shared.gold(), "-o", c / "sub.zip")
    workers = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True).stdout.split()
    if not workers:
        raise RuntimeError("preparing: rueval serve has no worker process to kill")
    for pid in workers:
        os.kill(int(pid), signal.SIGKILL)

    def scored(o: Outcome) -> str | None:
        found = json.loads(o.stdout.strip().splitlines()[-1])
        return None if found["status"] == "done" else f"{found['status']} after {found['seconds']} s"

    c.check(scored)
    return [sys.executable, "-c", SCORED, server.url, token, str(c / "sub.zip"), str(RESTARTED_S)]


UPLOAD = """
import sys, time
import httpx
url, token, path = sys.argv[1:4]
with httpx.Client(base_url=url, timeout=120, headers={"authorization": f"Bearer {token}"}) as client:
    sent = client.post("/api/submissions", files={"file": ("sub.zip", open(path, "rb").read())})
    if sent.status_code >= 400:
        print(f"error: {sent.status_code}: {' '.join(sent.text.split())[:500]}", file=sys.stderr)
        sys.exit(2)
    while (found := client.get(f"/api/submissions/{sent.json()['id']}").json())["status"] not in ("done", "failed"):
        time.sleep(0.25)
    if found["status"] == "failed":
        print(f"error: failed: {found['error']}", file=sys.stderr)
        sys.exit(2)
    print(f"scored: {found['total']}")
"""


@case("round3", "board: an upload whose PARus.jsonl gives a label twice", ERROR, "PARus.jsonl:2", "label", timeout=180)
def _(c: CaseDir) -> list[str]:
    server, token = board(c)
    c.rueval("submit", "-m", "majority", "--data", c.shared.gold(), "-o", c / "made.zip")
    with zipfile.ZipFile(c / "made.zip") as made, zipfile.ZipFile(c / "sub.zip", "w") as sent:
        for name in made.namelist():
            text = made.read(name).decode()
            if name == "PARus.jsonl":
                lines = text.splitlines()
                lines[1] = twice(lines[1], "label", 1 - json.loads(lines[1])["label"])
                text = "\n".join(lines) + "\n"
            sent.writestr(name, text)
    return [sys.executable, "-c", UPLOAD, server.url, token, str(c / "sub.zip")]
