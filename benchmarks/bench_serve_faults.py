"""The leaderboard service under floods and faults: what a real `rueval serve` (SQLite, one worker, the
default connection caps) answers while it is attacked or its storage fails.

    python benchmarks/bench_serve_faults.py [--flood 19990] [--flood-s 60] [--only token,uploads,...]

Not part of the test suite. Loopback only (the server listens on 127.0.0.1; the floods come from other
loopback addresses, 127.0.0.2 and up, as other clients would), every scenario bounded in requests and
seconds; the script stops by itself. The gold is the bundled samples' (tests/serve/board_support.py).
Linux: the server's memory and open files are read from /proc.

1. token: wrong tokens of a real token's form, from 8 clients (each its own address) for --token-s
   seconds; `GET /` latency before and during (whatever a check costs: a keyed hash since issue 35,
   argon2 before; and the per-address limit on wrong tokens).
2. uploads, uploads-spread: --flood unauthenticated uploads that declare 1,000 bytes, send about 100
   and stall, --concurrency of them open at once, from one address and then from 100; `GET /`
   latency, the server's RSS and open files, and how much serve.log grew.
3. worker: the scoring worker killed (SIGKILL) and a submission uploaded at once: the time until it
   is scored, beside the time a running worker takes.
4. lock: another process holds SQLite's write lock (BEGIN IMMEDIATE, then sleeping) for 10 s: the
   latency of the board page and the GET API, and of an upload made meanwhile.
5. disk: the store on a 32 MiB tmpfs (needs root to mount; skipped otherwise) filled to the last
   byte: uploads answered 503, a queued submission waiting, then the filler deleted: the time until
   that submission is scored.

Results go to benchmarks/results/bench_serve_faults.json and a Markdown table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from results_file import write_results

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "serve"))
from board_support import Server, WriteLock, bearer, write_gold  # noqa: E402

from rueval.run.spec import RunSpec  # noqa: E402
from rueval.run.submission import write_submission  # noqa: E402
from rueval.serve.auth import add_team  # noqa: E402
from rueval.serve.db import SQLITE_FILE, Database, database_url  # noqa: E402
from rueval.serve.secret import default_secret_file, load_secret  # noqa: E402

OUT = Path(__file__).parent / "results" / "bench_serve_faults.json"
HALF_UPLOAD = (
    b"POST /api/submissions HTTP/1.1\r\nHost: board\r\nContent-Type: multipart/form-data; boundary=b\r\n"
    b"Content-Length: 1000\r\n\r\n--b\r\nContent-Disposition: form-data; name=file; filename=a.zip\r\n\r\nPK"
)


class Probe:
    """`GET path` from 127.0.0.1 every ``every_s`` on a new connection, with the server's RSS and
    open files, until stopped."""

    def __init__(self, url: str, pid: int, path: str = "/", every_s: float = 0.25):
        self.url, self.path, self.every_s, self.pid = url, path, every_s, pid
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.rss: list[int] = []
        self.files: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                answer = httpx.get(self.url + self.path, timeout=10)
                if answer.status_code == 200:
                    self.latencies.append(time.monotonic() - started)
                else:
                    self.failures.append(str(answer.status_code))
            except httpx.HTTPError as e:
                self.failures.append(type(e).__name__)
            self.rss.append(rss_bytes(self.pid))
            self.files.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - started)))

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join()
        return {
            "probes": len(self.latencies) + len(self.failures),
            "ok": len(self.latencies),
            "failed": dict(sorted({f: self.failures.count(f) for f in self.failures}.items())),
            **latency_ms(self.latencies),
            "rss_max_mb": round(max(self.rss) / 2**20, 1) if self.rss else None,
            "open_files_max": max(self.files) if self.files else None,
        }


def rss_bytes(pid: int) -> int:
    """The process's resident memory, from Linux's /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1)) * 1024


def latency_ms(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"median_ms": None, "p95_ms": None, "max_ms": None}
    ordered = sorted(seconds)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def probed(server: Server, seconds: float, path: str = "/") -> dict[str, Any]:
    probe = Probe(server.url, server.process.pid, path)
    time.sleep(seconds)
    return probe.stop()


def board(work: Path, name: str, *options: str, store: Path | None = None) -> tuple[Server, str, Path]:
    """A new store with team "alpha", `rueval serve` on it; the server, the team's token, the store."""
    store = store or work / name
    db = Database(database_url(None, store))
    token = add_team(db, "alpha", load_secret(default_secret_file(store), store))  # the secret the board will read
    db.close()
    return Server(work / "gold", store, None, *options), token, store


def upload(server: Server, token: str, data: bytes, timeout_s: float = 60) -> httpx.Response:
    files = {"file": ("s.zip", data)}
    return httpx.post(f"{server.url}/api/submissions", files=files, headers=bearer(token), timeout=timeout_s)


def scored_after(server: Server, token: str, id: int, started: float, timeout_s: float = 120) -> float:
    while time.monotonic() - started < timeout_s:
        found = httpx.get(f"{server.url}/api/submissions/{id}", headers=bearer(token), timeout=30).json()
        if found["status"] in ("done", "failed"):
            assert found["status"] == "done", found
            return round(time.monotonic() - started, 2)
        time.sleep(0.1)
    raise AssertionError(f"submission {id} not scored within {timeout_s} s")


def log_size(server: Server) -> int:
    server.log.flush()
    return Path(server.log.name).stat().st_size


def token_flood(work: Path, seconds: float) -> dict[str, Any]:
    server, token, _ = board(work, "token")
    try:
        prefix = token.partition("_")[0]
        before = probed(server, 5)
        sent: list[int] = []
        stop = threading.Event()

        def flood(address: str) -> None:
            transport = httpx.HTTPTransport(local_address=address)
            with httpx.Client(base_url=server.url, transport=transport, timeout=30) as client:
                while not stop.is_set():
                    forged = f"{prefix}_{secrets.token_urlsafe(32)}"
                    sent.append(client.get("/api/submissions/1", headers=bearer(forged)).status_code)

        clients = [threading.Thread(target=flood, args=(f"127.0.0.{2 + i}",)) for i in range(8)]
        probe = Probe(server.url, server.process.pid)
        started = time.monotonic()
        for client in clients:
            client.start()
        time.sleep(seconds)
        stop.set()
        for client in clients:
            client.join()
        during = probe.stop()
        took = time.monotonic() - started
        load = {"requests": len(sent), "concurrency": 8, "seconds": round(took, 1)}
        statuses = {str(s): sent.count(s) for s in sorted(set(sent))}
        return {"scenario": "token flood", "load": load, "statuses": statuses, "before": before, "during": during}
    finally:
        server.stop()


async def _half_upload(port: int, source: str, outcomes: dict[str, int], wait_s: float) -> None:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    except OSError as e:
        outcomes[f"connect: {e.strerror or e}"] = outcomes.get(f"connect: {e.strerror or e}", 0) + 1
        return
    try:
        writer.write(HALF_UPLOAD)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), wait_s)  # until the server closes
        status = answer[9:12].decode(errors="replace") if answer.startswith(b"HTTP/1.1 ") else "closed"
    except TimeoutError:
        status = "still open at the end"
    except OSError:
        status = "reset"
    finally:
        writer.close()
    outcomes[status] = outcomes.get(status, 0) + 1


async def _flood(port: int, count: int, concurrency: int, sources: list[str], seconds: float) -> dict[str, int]:
    outcomes: dict[str, int] = {}
    slots = asyncio.Semaphore(concurrency)
    deadline = time.monotonic() + seconds

    async def one(i: int) -> None:
        async with slots:
            left = deadline - time.monotonic()
            if left > 0:
                await _half_upload(port, sources[i % len(sources)], outcomes, left)

    await asyncio.gather(*(one(i) for i in range(count)))
    return outcomes


def upload_flood(work: Path, count: int, concurrency: int, addresses: int, seconds: float) -> dict[str, Any]:
    server, _, _ = board(work, f"uploads-{addresses}")
    try:
        before = probed(server, 5)
        log_before = log_size(server)
        probe = Probe(server.url, server.process.pid)
        started = time.monotonic()
        sources = [f"127.0.0.{2 + i}" for i in range(addresses)]
        outcomes = asyncio.run(_flood(server.port, count, concurrency, sources, seconds))
        during = probe.stop()
        took = time.monotonic() - started
        log = server.read_log(tail=None)
        load = {"uploads": count, "concurrency": concurrency, "addresses": addresses, "seconds": round(took, 1)}
        return {
            "scenario": f"half-sent uploads from {addresses} address{'es' if addresses > 1 else ''}",
            "load": load,
            "outcomes": dict(sorted(outcomes.items())),
            "before": before,
            "during": during,
            "log_growth_kb": round((log_size(server) - log_before) / 1024, 1),
            "too_many_open_files": log.count("Too many open files"),
            "tracebacks": log.count("Traceback"),
        }
    finally:
        server.stop()


def worker_killed(work: Path, data: bytes) -> dict[str, Any]:
    server, token, _ = board(work, "worker")
    try:
        for _ in range(2):  # the second one is scored by a worker that has started
            started = time.monotonic()
            alive = scored_after(server, token, upload(server, token, data).json()["id"], started)
        [pid] = re.findall(r"started scoring worker (\d+)", server.read_log(tail=None))
        os.kill(int(pid), signal.SIGKILL)
        started = time.monotonic()
        id = upload(server, token, data).json()["id"]
        killed = scored_after(server, token, id, started)
        restarts = server.read_log(tail=None).count("restarting it in")
        return {"scenario": "worker killed", "scored_s_alive": alive, "scored_s_killed": killed, "restarts": restarts}
    finally:
        server.stop()


def lock_held(work: Path, data: bytes) -> dict[str, Any]:
    server, token, store = board(work, "lock")
    try:
        lock = WriteLock(store / SQLITE_FILE, seconds=10)
        locked = time.monotonic()
        answers: dict[str, Any] = {}
        upload_thread = threading.Thread(target=lambda: answers.update(upload=upload(server, token, data)))
        upload_thread.start()
        page = Probe(server.url, server.process.pid, "/")
        api = Probe(server.url, server.process.pid, "/api/leaderboard")
        time.sleep(8)
        results = {"page": page.stop(), "api": api.stop()}
        upload_thread.join()
        lock.release()
        upload_s = round(time.monotonic() - locked, 1)
        return {
            "scenario": "write lock held by another process for 10 s",
            **results,
            "upload": {"status": answers["upload"].status_code, "answered_after_s": upload_s},
        }
    finally:
        server.stop()


def disk_full(work: Path, data: bytes) -> dict[str, Any]:
    mount = Path(tempfile.mkdtemp(prefix="rueval-full-", dir="/tmp"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], capture_output=True).returncode:
        mount.rmdir()
        return {"scenario": "disk full", "skipped": "mounting a tmpfs needs root"}
    server = worker = None
    try:
        server, token, store = board(work, "disk", "--workers", "0", store=mount / "store")
        queued = upload(server, token, data).json()["id"]
        filler = mount / "filler"
        written = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(written, b"\0" * 2**12):  # to the last block
                pass
        except OSError:
            pass
        finally:
            os.close(written)
        refused = [upload(server, token, data).status_code for _ in range(10)]
        page = httpx.get(server.url + "/", timeout=30).status_code
        command = [sys.executable, "-m", "rueval", "serve-worker", "--gold", str(work / "gold"), "--store", str(store)]
        worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(8)
        status = httpx.get(f"{server.url}/api/submissions/{queued}", headers=bearer(token), timeout=30).json()["status"]
        filler.unlink()
        freed = time.monotonic()
        scored = scored_after(server, token, queued, freed)
        again = upload(server, token, data).status_code
        return {
            "scenario": "disk full (a 32 MiB tmpfs filled)",
            "uploads_while_full": {str(s): refused.count(s) for s in sorted(set(refused))},
            "board_page_while_full": page,
            "queued_submission_after_8_s_full": status,
            "scored_s_after_space_returned": scored,
            "upload_after": again,
        }
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(20)
        if server is not None:
            server.stop()
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| scenario | load | `GET /` before: median / p95 / max ms | during: median / p95 / max ms, failed | other |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        before, during = row.get("before"), row.get("during") or row.get("page")
        shown = {k: v for k, v in row.items() if k not in ("scenario", "load", "before", "during", "page")}
        lines.append(
            f"| {row['scenario']} | {row.get('load', '')} | {_lat(before)} | "
            f"{_lat(during)}{', failed ' + str(during['failed']) if during and during['failed'] else ''} | {shown} |"
        )
    return "\n".join(lines)


def _lat(probe: dict[str, Any] | None) -> str:
    return f"{probe['median_ms']} / {probe['p95_ms']} / {probe['max_ms']}" if probe else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flood", type=int, default=19_990, help="half-sent uploads per flood")
    parser.add_argument("--concurrency", type=int, default=1000, help="of them open at once")
    parser.add_argument("--flood-s", type=float, default=60.0, help="a flood's longest time")
    parser.add_argument("--token-s", type=float, default=20.0, help="the token flood's time")
    parser.add_argument("--only", default="token,uploads,uploads-spread,worker,lock,disk")
    args = parser.parse_args()
    chosen = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="rueval-bench-faults-") as folder:
        work = Path(folder)
        write_gold(work / "gold")
        write_submission(RunSpec.create("rsg", "majority", {}, data=str(work / "gold")), work / "m.zip")
        data = (work / "m.zip").read_bytes()
        scenarios = {
            "token": lambda: token_flood(work, args.token_s),
            "uploads": lambda: upload_flood(work, args.flood, args.concurrency, 1, args.flood_s),
            "uploads-spread": lambda: upload_flood(work, args.flood, args.concurrency, 100, args.flood_s),
            "worker": lambda: worker_killed(work, data),
            "lock": lambda: lock_held(work, data),
            "disk": lambda: disk_full(work, data),
        }
        rows = []
        for name, run in scenarios.items():
            if name in chosen:
                print(f"{name} ...", flush=True)
                rows.append(run())
                print(rows[-1], flush=True)
    write_results(OUT, rows, flood=args.flood, concurrency=args.concurrency, flood_s=args.flood_s)
    print(table(rows))


if __name__ == "__main__":
    main()
