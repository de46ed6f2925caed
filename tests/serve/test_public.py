"""What the board shows and to whom, in-process: every number as printed on every route, the
secret file, team names that look like another team's, and links never built on the Host header."""

import os
import re
import stat

import pytest
from board_support import bearer, free_port
from fastapi.testclient import TestClient

from rueval.core.errors import RuevalError
from rueval.serve.app import create_app
from rueval.serve.auth import add_team, check_team_name
from rueval.serve.db import database_url
from rueval.serve.secret import default_secret_file, load_secret
from rueval.serve.service import ServeConfig, Service

TIMES = {"created", "finished"}  # seconds since the epoch: when, not how well


def numbers(value, key: str = ""):
    """Every number in a JSON value but the times, with where it is."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name not in TIMES:
                yield from numbers(item, f"{key}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from numbers(item, f"{key}[{i}]")
    elif isinstance(value, float):
        yield key, value


def visible_text(page: str) -> str:
    """A page's text, without its style sheet, the level the marks are explained with and the
    papers' values the report quotes as printed (none is the gold's)."""
    text = re.sub(r"<[^>]*?>", " ", re.sub(r"<style>.*?</style>", "", page, flags=re.S))
    return re.sub(r"the paper prints one value, [\d.]+", "", text.replace("p ≥ 0.05", ""))


def upload(client, token, data, public=True):
    files = {"file": ("s.zip", data, "application/zip")}
    return client.post("/api/submissions", headers=bearer(token), files=files, data={"public": str(public)})


def test_every_number_the_api_and_the_pages_publish_has_one_decimal_at_most(client, tokens, worker, submission_zip):
    for model in ("heuristic", "majority"):
        upload(client, tokens["alpha"], submission_zip(model))
    while worker.score_next():
        pass
    answers = [client.get(path).json() for path in ("/api/leaderboard", "/api/submissions/1", "/api/submissions/2")]
    found = list(numbers(answers))
    assert len(found) > 200  # scores, metrics, intervals, differences, agreement, reference rows
    assert [(key, value) for key, value in found if value != round(value, 1)] == []
    lidirus = answers[1]["tasks"]["lidirus"]
    assert all(set(values) == {"n"} for values in lidirus["breakdown"].values())  # features of < min-n items
    assert "sha256" not in str(answers)
    for path in ("/", "/submissions/1", "/teams/alpha", "/submissions/1/report"):
        page = visible_text(client.get(path).text)
        assert [page[m.start() - 80 : m.end()] for m in re.finditer(r"\d\.\d\d+", page)] == [], path
        answers.append(page)
    # rueval compare's decision statistics: they count the items one entry gets right and another wrong
    for leak in ("p_value", "p-value", "discordan", "disagree", "minimum_detectable", "McNemar", "vs_leader"):
        assert leak.lower() not in str(answers).lower(), leak


def test_the_secret_file_is_made_owner_only_kept_and_never_in_the_store(tmp_path):
    store = tmp_path / "board"
    path = default_secret_file(store)
    assert path == tmp_path / "board.secret"
    secret = load_secret(path, store)
    assert len(secret) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret(path, store) == secret and load_secret(path, store, create=False) == secret  # a restart
    assert load_secret(tmp_path / "other.secret", store) != secret
    cases = {
        store / "secret": "inside the store",
        tmp_path / "missing.secret": "not found; copy the board's secret file",
    }
    for where, message in cases.items():
        with pytest.raises(RuevalError, match=message):
            load_secret(where, store, create=False)
    os.chmod(path, 0o640)
    with pytest.raises(RuevalError, match="readable by others; chmod 600 it"):
        load_secret(path, store)
    (tmp_path / "short.secret").write_text("abcd")
    os.chmod(tmp_path / "short.secret", 0o600)
    with pytest.raises(RuevalError, match="expected 64 hex digits"):
        load_secret(tmp_path / "short.secret", store)


def test_names_confusable_with_a_team_or_path_steps_are_refused_in_one_line(service, cli, tmp_path):
    add_team(service.db, "Team Alpha", service.auth.secret)
    refused = {
        "Теам Alpha": "looks like the team 'Team Alpha'",  # Cyrillic Т, е, а
        "team  alpha": "looks like the team 'Team Alpha'",
        "Team A1pha": "looks like the team 'Team Alpha'",
        "..": "a name of dots only is a path step",
        ".": "a name of dots only is a path step",
        "a/b": "slashes are not allowed",
        "x\u202ey": "control characters",
        "\x00": "control characters",
    }
    for name, message in refused.items():
        with pytest.raises(RuevalError, match=re.escape(message)) as error:
            add_team(service.db, name, service.auth.secret)
        assert "\n" not in str(error.value)
    assert check_team_name("Team Beta", ["Team Alpha"]) == "Team Beta"
    add_team(service.db, "Team Beta", service.auth.secret)
    store = tmp_path / "cli-board"
    assert cli("serve-admin", "add-team", "alpha", "--store", store).exit_code == 0
    result = cli("serve-admin", "add-team", "аlpha", "--store", store)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "looks like the team 'alpha'" in result.stderr


def test_a_forged_host_header_appears_in_no_page_and_no_answer(gold_dir, gold, tmp_path, submission_zip):
    forged = "evil.example"
    for public_url in (None, "https://board.example.org"):
        store = tmp_path / f"store-{public_url is None}"
        config = ServeConfig(gold_dir, store, database_url(None, store), public_url=public_url)
        service = Service.open(config, gold)
        token = add_team(service.db, "alpha", service.auth.secret)
        with TestClient(create_app(service), base_url=f"http://{forged}") as client:
            answers = [upload(client, token, submission_zip("majority"))]
            expected = f"{public_url or ''}/submissions/1"
            assert answers[0].status_code == 202 and answers[0].json()["url"] == expected
            page = client.get("/signin")
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
            answers.append(client.post("/signin", data={"token": token, "csrf": csrf}, follow_redirects=False))
            for path in ("/", "/submissions/1", "/teams/alpha", "/upload", "/api/leaderboard", "/api/submissions/1"):
                answers.append(client.get(path, headers=bearer(token), follow_redirects=False))
            for path in ("/api/leaderboard/", "/teams/alpha/", "/nowhere"):
                answers.append(client.get(path, follow_redirects=False))
                assert answers[-1].status_code == 404  # a trailing slash is not redirected to the Host
        for answer in answers:
            assert forged not in answer.text and forged not in str(answer.headers), answer.url
        service.db.close()


def test_a_bad_proxy_address_or_public_url_is_refused_before_the_board_starts(cli, gold_dir, tmp_path):
    cases = {
        ("--trusted-proxy", "proxy.local"): "--trusted-proxy proxy.local: expected an IP address or network",
        ("--public-url", "board.example.org"): "--public-url board.example.org: expected the board's http",
        ("--secret-file", str(tmp_path / "board" / "s")): "inside the store",
    }
    for option, message in cases.items():
        options = ["--store", tmp_path / "board", "--workers", "0", "--port", free_port(), *option]
        result = cli("serve", "--gold", gold_dir, *options)
        assert result.exit_code == 2 and message in result.stderr and result.stderr.count("\n") == 1, result.output
