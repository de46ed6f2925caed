"""The web pages in-process: signing in with the team's token (HttpOnly, SameSite cookies; forms
protected by a form token), uploading, publishing, the board's sorting and marks, a team's page,
and every string from a user escaped."""

import re

from board_support import members_of, zip_of

from rueval.serve.auth import add_team


def form_token(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def sign_in(client, token: str):
    page = client.get("/signin")
    return client.post("/signin", data={"token": token, "csrf": form_token(page.text)}, follow_redirects=False)


def test_signing_in_sets_an_httponly_samesite_session_cookie_and_shows_the_team(client, tokens):
    page = client.get("/signin")
    assert "httponly" in page.headers["set-cookie"].lower() and "samesite=strict" in page.headers["set-cookie"].lower()
    answer = sign_in(client, tokens["alpha"])
    assert answer.status_code == 303 and answer.headers["location"] == "/teams/alpha"
    cookie = answer.headers["set-cookie"].lower()
    assert cookie.startswith("rueval_session=") and "httponly" in cookie and "samesite=strict" in cookie
    assert ">alpha</a>" in client.get("/").text and "Sign out" in client.get("/").text


def test_a_sign_in_form_without_its_token_or_with_a_wrong_team_token_is_refused(client, tokens):
    client.get("/signin")
    forged = client.post("/signin", data={"token": tokens["alpha"], "csrf": "made-up"})
    assert forged.status_code == 403 and "does not match" in forged.text
    wrong = client.post("/signin", data={"token": "rueval_x_y", "csrf": form_token(client.get("/signin").text)})
    assert wrong.status_code == 401 and "names no team" in wrong.text and "rueval_session" not in client.cookies


def test_an_upload_through_the_form_needs_the_sessions_form_token(client, tokens, submission_zip, worker):
    files = {"file": ("h.zip", submission_zip("heuristic"), "application/zip")}
    assert client.get("/upload", follow_redirects=False).headers["location"] == "/signin"
    assert client.post("/upload", data={"csrf": "x"}, files=files).status_code == 401
    sign_in(client, tokens["alpha"])
    assert client.post("/upload", data={"csrf": "forged"}, files=files).status_code == 403
    csrf = form_token(client.get("/upload").text)
    sent = client.post("/upload", data={"csrf": csrf, "name": "by form"}, files=files, follow_redirects=False)
    assert sent.status_code == 303 and sent.headers["location"] == "/submissions/1"
    waiting = client.get("/submissions/1").text
    assert 'http-equiv="refresh"' in waiting and ">queued<" in waiting
    worker.score_next()
    page = client.get("/submissions/1").text
    assert ">done<" in page and 'http-equiv="refresh"' not in page and 'id="scores"' in page
    assert "LiDiRus diagnostics" in client.get("/submissions/1/report").text


def test_a_bad_zip_through_the_form_is_a_page_naming_the_line(client, tokens):
    sign_in(client, tokens["alpha"])
    csrf = form_token(client.get("/upload").text)
    files = {"file": ("bad.zip", zip_of({"PARus.jsonl": '{"idx": 0, "label": "x"}\n'}))}
    answer = client.post("/upload", data={"csrf": csrf}, files=files)
    assert answer.status_code == 400 and "PARus.jsonl:1: field &#39;label&#39;" in answer.text


def test_a_team_publishes_its_submission_from_its_page_and_others_see_only_public_ones(
    client, tokens, submission_zip, worker, service
):
    sign_in(client, tokens["alpha"])
    csrf = form_token(client.get("/upload").text)
    client.post("/upload", data={"csrf": csrf, "name": "mine"}, files={"file": ("m.zip", submission_zip("majority"))})
    worker.score_next()
    assert "mine" in client.get("/teams/alpha").text
    assert client.post("/submissions/1/publish", data={"csrf": "forged", "public": "true"}).status_code == 403
    client.post("/submissions/1/publish", data={"csrf": csrf, "public": "true"})
    client.post("/signout", data={"csrf": csrf})
    assert "Sign in" in client.get("/").text
    assert "mine" in client.get("/teams/alpha").text and 'data-id="1"' in client.get("/").text
    sign_in(client, tokens["beta"])
    assert client.get("/submissions/1").status_code == 200  # public now


def test_a_private_submission_is_a_404_page_for_another_team(client, tokens, submission_zip):
    sign_in(client, tokens["alpha"])
    csrf = form_token(client.get("/upload").text)
    client.post("/upload", data={"csrf": csrf}, files={"file": ("m.zip", submission_zip("majority"))})
    client.cookies.clear()
    sign_in(client, tokens["beta"])
    for path in ("/submissions/1", "/submissions/1/report"):
        assert client.get(path).status_code == 404
    assert "No submission yet" in client.get("/teams/alpha").text


def test_the_board_sorts_by_any_column_marks_partial_rows_and_sets_the_reference_rows_apart(
    client, service, submission_zip, worker
):
    tokens = {name: add_team(service.db, name, service.auth.secret) for name in ("a", "b", "c")}
    members = members_of(submission_zip("heuristic"))
    uploads = {
        "a": submission_zip("majority"),
        "b": submission_zip("heuristic"),
        "c": zip_of({"RCB.jsonl": members["RCB.jsonl"], "DaNetQA.jsonl": members["DaNetQA.jsonl"]}),
    }
    for name, data in uploads.items():
        files = {"file": (f"{name}.zip", data)}
        headers = {"authorization": f"Bearer {tokens[name]}"}
        client.post("/api/submissions", headers=headers, files=files, data={"public": "true"})
    while worker.score_next():
        pass
    board = client.get("/").text
    assert re.findall(r'<tr class="submission" data-id="(\d)"', board) == ["2", "1", "3"]  # partial last
    assert 'class="badge partial"' in board and "≈M" in board and "Reference rows" in board
    assert "Majority (on this gold)" in board and "Human" in board
    by_danetqa = client.get("/?sort=danetqa&order=asc").text
    assert re.findall(r'<tr class="submission" data-id="(\d)"', by_danetqa)[0] in ("2", "3")
    assert client.get("/?sort=<script>").status_code == 200  # an unknown column sorts by the total


def test_every_user_string_is_escaped(client, service, submission_zip, worker):
    token = add_team(service.db, "<b onmouseover=alert(1)>", service.auth.secret)
    files = {"file": ("x.zip", submission_zip("majority"))}
    data = {"name": "<script>alert(1)</script>", "public": "true"}
    client.post("/api/submissions", headers={"authorization": f"Bearer {token}"}, files=files, data=data)
    worker.score_next()
    for path in ("/", "/submissions/1", "/teams/%3Cb%20onmouseover%3Dalert(1)%3E"):
        page = client.get(path)
        assert page.status_code == 200 and "<script>alert" not in page.text and "<b onmouseover" not in page.text
        assert "&lt;" in page.text
