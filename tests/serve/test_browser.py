"""The board in a real browser (Playwright driving Debian's Chromium, no browser download): a team
signs in with its token, uploads a zip through the form, waits on the submission's page for the
score, publishes it and reads it on the board, sorted by a column. Screenshots of the board go to
$RUEVAL_SCREENSHOT_DIR when set (docs/images holds the ones the documentation shows)."""

import os
import shutil
from pathlib import Path

import httpx
import pytest
from board_support import Server, bearer, members_of, wait_for, zip_of
from support import require, require_modules

pytestmark = pytest.mark.slow
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
FLAGS += ["--disable-component-update", "--disable-sync"]


@pytest.fixture
def browser():
    require(CHROMIUM.exists(), "needs Chromium: apt-get install -y chromium (.ci/run installs it)")
    require_modules("playwright", extra="test")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        launched.close()


def add_team(cli, store, name: str) -> str:
    result = cli("serve-admin", "add-team", name, "--store", store)
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def others_on_the_board(cli, store, url: str, submission_zip) -> None:
    """Two more teams' public submissions: the majority class, and the heuristics on two tasks only."""
    members = members_of(submission_zip("heuristic"))
    uploads = {
        "Baseline Lab": ("majority class", submission_zip("majority")),
        "Rules Inc": ("rules on RCB and DaNetQA", zip_of({n: members[n] for n in ("RCB.jsonl", "DaNetQA.jsonl")})),
    }
    with httpx.Client(base_url=url, timeout=30) as client:
        for team, (name, data) in uploads.items():
            token = add_team(cli, store, team)
            files = {"file": ("s.zip", data)}
            form = {"name": name, "public": "true"}
            sent = client.post("/api/submissions", headers=bearer(token), files=files, data=form)
            wait_for(client, sent.json()["id"], token)


def screenshot(page, name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    if os.environ.get("RUEVAL_SCREENSHOT_DIR"):
        shutil.copy(path, Path(os.environ["RUEVAL_SCREENSHOT_DIR"]) / name)
    return path


def test_a_team_signs_in_uploads_waits_for_its_score_and_reads_the_board(
    browser, cli, gold_dir, tmp_path, servers, submission_zip
):
    store = tmp_path / "store"
    token = add_team(cli, store, "Team Alpha")
    server = Server(gold_dir, store)
    servers.append(server)
    others_on_the_board(cli, store, server.url, submission_zip)
    zip_path = tmp_path / "heuristic.zip"
    zip_path.write_bytes(submission_zip("heuristic"))
    page = browser.new_page(viewport={"width": 1500, "height": 900})

    page.goto(f"{server.url}/signin")
    page.fill("#token", token)
    page.click("#signin")
    page.wait_for_url(f"{server.url}/teams/Team%20Alpha")
    assert page.inner_text("h1") == "Team Alpha"

    page.click("text=Upload")
    page.set_input_files("#file", str(zip_path))
    page.fill("#name", "heuristics + majority")
    page.click("#send")
    page.wait_for_url(f"{server.url}/submissions/*")
    page.wait_for_selector("#status:text('done')", timeout=60_000)  # the page reloads itself meanwhile
    assert float(page.inner_text("#total")) > 0
    assert page.locator("#scores tbody tr").count() == 9
    screenshot(page, "board-submission.png", tmp_path)
    page.click("#publish")
    page.wait_for_selector("text=Make private")

    page.goto(server.url)
    rows = page.locator("#board tbody tr.submission")
    assert rows.count() == 3
    assert rows.nth(0).inner_text().split("\t")[2].startswith("heuristics + majority")
    assert "partial" in rows.nth(2).inner_text()
    assert page.locator("#references tbody tr").count() >= 10
    shot = screenshot(page, "board.png", tmp_path)
    assert shot.stat().st_size > 20_000

    page.click("#board thead >> text=danetqa")
    assert "sort=danetqa" in page.url and page.locator("#board th.sorted").inner_text().startswith("danetqa")
    page.click("#board thead >> text=danetqa")  # again: the other way round
    assert "order=asc" in page.url

    page.goto(f"{server.url}/submissions/1")
    page.click("#report")
    page.wait_for_selector("text=LiDiRus diagnostics")
    assert page.locator("img").count() > 0  # the report's figures, as data: URLs under the page's policy
