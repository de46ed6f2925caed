"""The JSON API in-process: upload, score, see, publish, rank; tokens, visibility, limits, and
bad requests of every kind as clear 4xx answers, the gold never among them."""

import base64
import json

from board_support import bearer, members_of, zip_of

from rueval.serve.auth import LEGACY_HASHER, token_digest
from rueval.serve.db import Team, Token


def upload(client, token, data: bytes, name: str = "", public: bool = False):
    files = {"file": ("sub.zip", data, "application/zip")}
    return client.post(
        "/api/submissions", headers=bearer(token), files=files, data={"name": name, "public": str(public)}
    )


def test_an_upload_is_queued_then_scored_by_a_worker_and_shown_to_its_team(client, tokens, worker, submission_zip):
    answer = upload(client, tokens["alpha"], submission_zip("heuristic"), "rules")
    assert answer.status_code == 202
    created = answer.json()
    assert created["status"] == "queued" and created["url"] == f"/submissions/{created['id']}"  # relative
    assert worker.score_next() and not worker.score_next()
    found = client.get(f"/api/submissions/{created['id']}", headers=bearer(tokens["alpha"])).json()
    assert found["status"] == "done" and found["name"] == "rules" and found["team"] == "alpha"
    assert found["error"] is None and found["total"] > 0 and not found["partial"]
    rcb = found["tasks"]["rcb"]
    assert set(rcb) >= {"score", "metrics", "ci", "versus", "rules"} and set(rcb["metrics"]) == {"avg_f1", "accuracy"}
    assert found["tasks"]["lidirus"]["breakdown"]["logic"]["n"] > 0  # the per-feature MCC


def test_a_private_submission_is_another_teams_404_until_it_is_published(client, tokens, worker, submission_zip):
    id = upload(client, tokens["alpha"], submission_zip("majority")).json()["id"]
    worker.score_next()
    for headers in (bearer(tokens["beta"]), {}):
        answer = client.get(f"/api/submissions/{id}", headers=headers)
        assert answer.status_code == 404 and answer.json() == {"error": f"no submission {id}"}
    assert client.get("/api/submissions/99999", headers=bearer(tokens["beta"])).json() == {
        "error": "no submission 99999"
    }
    assert client.get("/api/leaderboard").json()["rows"] == []
    assert (
        client.patch(f"/api/submissions/{id}", headers=bearer(tokens["beta"]), json={"public": True}).status_code == 404
    )
    published = client.patch(f"/api/submissions/{id}", headers=bearer(tokens["alpha"]), json={"public": True})
    assert published.status_code == 200 and published.json()["public"] is True
    assert client.get(f"/api/submissions/{id}").json()["status"] == "done"
    [row] = client.get("/api/leaderboard").json()["rows"]
    assert (row["team"], row["id"]) == ("alpha", id) and set(row["tasks"]) == set(client.app.state.service.gold.tasks)


def test_the_leaderboard_ranks_public_submissions_best_first_beside_the_reference_rows(
    client, tokens, worker, submission_zip
):
    for model, token in (("majority", "alpha"), ("heuristic", "beta")):
        upload(client, tokens[token], submission_zip(model), model, public=True)
    while worker.score_next():
        pass
    board = client.get("/api/leaderboard").json()
    assert [row["name"] for row in board["rows"]] == ["heuristic", "majority"]
    assert board["rows"][0]["total"] > board["rows"][1]["total"]
    assert board["rows"][1]["not_distinguishable_from"]["rcb"] == ["majority", "heuristic"]
    names = [row["name"] for row in board["references"]]
    assert names[:2] == ["Majority (on this gold)", "Heuristics + majority (on this gold)"]
    assert "Human" in names and "Heuristics + majority" in names  # the papers' rows
    majority_row = board["references"][0]
    assert majority_row["total"] == board["rows"][1]["total"]  # rueval's majority on this gold is the majority zip


def test_a_partial_zip_is_scored_marked_and_ranked_after_complete_ones(client, tokens, worker, submission_zip):
    members = members_of(submission_zip("heuristic"))
    upload(client, tokens["alpha"], zip_of({"RCB.jsonl": members["RCB.jsonl"]}), "rcb only", public=True)
    upload(client, tokens["beta"], submission_zip("majority"), "full", public=True)
    while worker.score_next():
        pass
    rows = client.get("/api/leaderboard").json()["rows"]
    assert [(row["name"], row["partial"], row["total"] is None) for row in rows] == [
        ("full", False, False),
        ("rcb only", True, True),
    ]


def test_tokens_are_required_checked_and_stored_only_as_their_keyed_hash(client, tokens, service, submission_zip):
    data = submission_zip("majority")
    missing = client.post("/api/submissions", files={"file": ("s.zip", data)})
    assert missing.status_code == 401 and "missing token" in missing.json()["error"]
    for wrong in ("nonsense", tokens["alpha"][:-2] + "xx", "rueval__", "Basic abc"):
        answer = upload(client, wrong, data)
        assert answer.status_code == 401 and answer.json() == {"error": "invalid token"}
    with service.db.session() as session:
        rows = list(session.query(Token))
    assert {row.digest for row in rows} == {token_digest(service.auth.secret, token) for token in tokens.values()}
    assert all(row.hash is None and row.key is None for row in rows)
    assert all(len(base64.urlsafe_b64decode(token.removeprefix("rueval_") + "=")) == 32 for token in tokens.values())


def test_a_token_of_an_earlier_rueval_is_checked_once_with_argon2_and_rewritten(client, service):
    token = "rueval_0123456789abcdef_" + "s" * 43  # the earlier form: rueval_<key>_<secret>
    with service.db.session() as session:
        team = Team(name="old", created=0.0)
        session.add(team)
        session.flush()
        session.add(Token(team_id=team.id, key="0123456789abcdef", hash=LEGACY_HASHER.hash(token), created=0.0))
    wrong = token[:-1] + "x"
    assert client.get("/api/submissions/1", headers=bearer(wrong)).status_code == 401
    for _ in range(2):  # the first check rewrites the row, the second finds it by its keyed hash
        assert client.get("/api/submissions/1", headers=bearer(token)).json() == {"error": "no submission 1"}
        with service.db.session() as session:
            [row] = session.query(Token).all()
        assert (row.key, row.hash, row.digest) == (None, None, token_digest(service.auth.secret, token))
    assert client.get("/api/submissions/1", headers=bearer(wrong)).status_code == 401


def test_bad_uploads_are_400_with_the_line_at_fault_and_nothing_is_queued(client, tokens, service):
    cases = {
        b"not a zip": "upload: not a zip archive",
        zip_of({"PARus.jsonl": '{"idx": 0, "label": 7}\n'}): "PARus.jsonl:1: field 'label': 7 is not a label",
    }
    for data, message in cases.items():
        answer = upload(client, tokens["alpha"], data)
        assert answer.status_code == 400 and answer.json()["error"].startswith(message)
    no_file = client.post("/api/submissions", headers=bearer(tokens["alpha"]), data={"name": "x"})
    assert no_file.status_code == 400 and no_file.json() == {"error": "field 'file': Field required"}
    assert client.get("/api/submissions/abc").status_code == 400
    assert client.get("/api/submissions/99999999999999999999").status_code == 400
    assert client.get("/api/leaderboard").json()["rows"] == []
    with service.db.session() as session:
        from rueval.serve.db import Submission

        assert session.query(Submission).count() == 0


def test_a_team_over_its_daily_limit_gets_429_with_when_to_come_back(client, tokens, submission_zip):
    data = submission_zip("majority")
    for _ in range(5):  # the fixture's limit
        assert upload(client, tokens["alpha"], data).status_code == 202
    over = upload(client, tokens["alpha"], data)
    assert over.status_code == 429 and "5 submissions in the last 24 hours" in over.json()["error"]
    assert 0 < int(over.headers["retry-after"]) <= 24 * 3600
    assert upload(client, tokens["beta"], data).status_code == 202  # the limit is per team


def test_the_same_zip_uploaded_twice_is_stored_once_by_its_content(client, tokens, service, submission_zip):
    data = submission_zip("majority")
    upload(client, tokens["alpha"], data)
    upload(client, tokens["beta"], data)
    files = list((service.config.store / "uploads").rglob("*.zip"))
    assert len(files) == 1 and files[0].read_bytes() == data


def test_a_body_over_the_limit_is_413_before_it_is_read(client, tokens):
    limit = client.app.state.service.config.limits.upload_bytes
    answer = upload(client, tokens["alpha"], b"0" * (limit + 2 * 2**20))
    assert answer.status_code == 413 and "over the limit" in answer.json()["error"]


def test_the_gold_is_never_served(client, gold_dir):
    paths = ["/gold", "/static/", "/api/gold", "/PARus/test.jsonl", "/../gold/PARus/test.jsonl", "/store/"]
    paths += [f"/{gold_dir}/PARus/test.jsonl"]
    secret = (gold_dir / "PARus" / "test.jsonl").read_text().splitlines()[0]
    for path in paths:
        answer = client.get(path)
        assert answer.status_code == 404 and secret not in answer.text
    routes = set(client.get("/api/openapi.json").json()["paths"])
    assert "/api/leaderboard" in routes and "/submissions/{id}/report" in routes
    assert not any("gold" in route or "static" in route or "{path" in route for route in routes)


def test_responses_carry_the_security_headers(client):
    headers = client.get("/api/leaderboard").headers
    assert (
        "script-src" not in headers["content-security-policy"]
        and "default-src 'none'" in headers["content-security-policy"]
    )
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert json.loads(client.get("/api/openapi.json").text)["info"]["title"] == "rueval leaderboard"
