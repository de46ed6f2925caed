"""`rueval serve` as a user runs it, in processes of its own: the whole path from adding a team to
a ranked submission, a server killed while scoring that resumes at restart, 50 uploads at once,
and bad input of every kind answered with a clear 4xx while the server goes on serving."""

import json
import signal
import socket
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from board_support import Server, bearer, wait_for

from rueval.results import RunResult
from rueval.serve.disclosure import shown

pytestmark = pytest.mark.slow


def add_team(cli, store, name: str) -> str:
    result = cli("serve-admin", "add-team", name, "--store", store)
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def test_from_a_new_team_to_a_ranked_submission_whose_scores_equal_rueval_run(cli, gold_dir, tmp_path, servers):
    store = tmp_path / "store"
    token = add_team(cli, store, "alpha")
    server = Server(gold_dir, store)
    servers.append(server)
    submitted = cli(
        "submit", "-m", "heuristic", "--data", gold_dir, "-o", tmp_path / "h.zip",
        "--to", server.url, "--token", token, "--name", "rules", "--public",
    )  # fmt: skip
    assert submitted.exit_code == 0, submitted.output
    assert f"uploaded as submission 1: {server.url}/submissions/1" in submitted.output
    assert "submission 1 scored: total" in submitted.output
    ran = cli("run", "-m", "heuristic", "-t", "rsg", "--data", gold_dir, "-o", tmp_path / "run")
    assert ran.exit_code == 0, ran.output
    run = RunResult.read(tmp_path / "run")
    [row] = httpx.get(f"{server.url}/api/leaderboard").json()["rows"]
    assert (row["team"], row["name"], row["id"]) == ("alpha", "rules", 1)
    assert row["tasks"] == {name: shown(result.score) for name, result in run.tasks.items()}  # as printed
    assert row["total"] == shown(run.rsg_total)
    report = httpx.get(f"{server.url}/submissions/1/report", timeout=120)  # drawn when first asked for
    assert report.status_code == 200 and "LiDiRus diagnostics" in report.text


def test_an_upload_without_a_token_or_with_a_bad_one_fails_the_command_with_one_line(cli, gold_dir, tmp_path, servers):
    server = Server(gold_dir, tmp_path / "store")
    servers.append(server)
    result = cli("submit", "-m", "majority", "--data", gold_dir, "-o", tmp_path / "m.zip", "--to", server.url)
    assert result.exit_code == 2 and "--to needs the team's token" in result.output
    result = cli("submit", "--data", gold_dir, "-o", tmp_path / "m.zip", "--to", server.url, "--token", "rueval_x_y")
    assert result.exit_code == 2 and "answered 401: invalid token" in result.output


def statuses(store) -> dict[int, str]:
    with sqlite3.connect(store / "board.sqlite3", timeout=30) as connection:
        return dict(connection.execute("select id, status from submissions"))


def test_a_server_killed_while_scoring_resumes_at_restart_and_keeps_the_board(
    cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    token = add_team(cli, store, "alpha")
    server = Server(gold_dir, store, None, "--lease", "2", "--daily-limit", "20")
    servers.append(server)
    with httpx.Client(base_url=server.url, headers=bearer(token), timeout=30) as client:
        files = {"file": ("m.zip", submission_zip("majority"))}
        first = client.post("/api/submissions", files=files, data={"public": "true"})
        wait_for(client, first.json()["id"], token)
        board_before = client.get("/api/leaderboard").json()
        ids = [
            client.post("/api/submissions", files={"file": ("h.zip", submission_zip("heuristic"))}).json()["id"]
            for _ in range(8)
        ]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # seen scoring while stopped: the job is still scoring at the kill
        if "scoring" in statuses(store).values():
            server.send(signal.SIGSTOP)
            if "scoring" in statuses(store).values():
                break
            server.send(signal.SIGCONT)
        time.sleep(0.01)
    server.kill()  # the server and its worker, at once
    left = statuses(store)
    assert "scoring" in left.values(), left  # killed halfway through a job (the worker's first takes longest)
    restarted = Server(gold_dir, store, None, "--lease", "2", "--daily-limit", "20")
    servers.append(restarted)
    with httpx.Client(base_url=restarted.url, headers=bearer(token), timeout=30) as client:
        found = [wait_for(client, id, token) for id in ids]
        assert [f["status"] for f in found] == ["done"] * 8
        assert len({f["total"] for f in found}) == 1  # a resumed job scores as the others did
        # and gets the same intervals: the restarted board seeds with the same secret file
        assert len({json.dumps(f["tasks"], sort_keys=True) for f in found}) == 1
        assert client.get("/api/leaderboard").json() == board_before


def test_fifty_uploads_at_once_from_five_teams_all_land_with_their_scores(
    cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    tokens = [add_team(cli, store, f"team {i}") for i in range(5)]
    server = Server(gold_dir, store, None, "--workers", "2")
    servers.append(server)
    zips = {model: submission_zip(model) for model in ("majority", "heuristic")}
    jobs = [(tokens[i % 5], "majority" if i % 2 else "heuristic", f"upload {i}") for i in range(50)]

    def send(job):
        token, model, name = job
        with httpx.Client(base_url=server.url, headers=bearer(token), timeout=120) as client:
            answer = client.post("/api/submissions", files={"file": ("s.zip", zips[model])}, data={"name": name})
            return token, model, answer

    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(send, jobs))
    assert [answer.status_code for _, _, answer in answers] == [202] * 50
    totals: dict[str, set] = {"majority": set(), "heuristic": set()}
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for token, model, answer in answers:
            found = wait_for(client, answer.json()["id"], token, timeout_s=300)
            assert found["status"] == "done" and found["name"] == answer.json()["name"]
            totals[model].add((found["total"], json.dumps(found["tasks"], sort_keys=True)))  # intervals too
    assert len(totals["majority"]) == len(totals["heuristic"]) == 1
    assert len(set(statuses(store))) == 50


def raw_request(port: int, head: bytes, body: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer:
                break
        return answer


def test_bad_input_of_every_kind_is_a_clear_4xx_and_the_server_goes_on_serving(
    cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    alpha, beta = add_team(cli, store, "alpha"), add_team(cli, store, "beta")
    server = Server(gold_dir, store)
    servers.append(server)
    # a 1 GB upload, declared: refused from its headers, before a byte of it is read
    head = f"POST /api/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alpha}\r\n"
    head += "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1073741824\r\n\r\n"
    assert raw_request(server.port, head.encode()).startswith(b"HTTP/1.1 413")

    def endless():  # a 1 GB upload, streamed without a length: cut off at the limit
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n'
        for _ in range(1024):
            yield b"0" * 2**20

    with httpx.Client(base_url=server.url, headers=bearer(alpha), timeout=60) as client:
        try:
            streamed = client.post(
                "/api/submissions", content=endless(), headers={"content-type": "multipart/form-data; boundary=b"}
            )
            assert streamed.status_code == 413
        except httpx.TransportError:
            pass  # the server closed the connection on the rest of the body: also a refusal
        cases = [
            (client.post("/api/submissions", files={"file": ("a.zip", b"PK\x03\x04 not really")}), 400, "not a zip"),
            (client.post("/api/submissions", files={"file": ("a.zip", b"")}), 400, "empty file"),
            (client.post("/api/submissions", content=b"{}", headers={"content-type": "application/json"}), 400, "file"),
            (client.post("/upload", data={"csrf": "forged"}, files={"file": ("a.zip", b"x")}), 401, "sign in"),
            (client.post("/signin", data={"token": alpha, "csrf": "forged"}), 403, "does not match"),
        ]
        private = client.post("/api/submissions", files={"file": ("m.zip", submission_zip("majority"))}).json()["id"]
        cases.append((client.get(f"/api/submissions/{private}", headers=bearer(beta)), 404, "no submission"))
        forged = bearer(beta[:-3] + "abc")
        cases.append((client.get(f"/api/submissions/{private}", headers=forged), 401, "invalid token"))
        for answer, status, message in cases:
            assert answer.status_code == status and message in answer.text, (answer.status_code, answer.text[:300])
        assert client.get("/api/leaderboard").status_code == 200
        assert wait_for(client, private, alpha)["status"] == "done"
    assert "Traceback" not in server.read_log()
