"""/api/openapi.json describes every response of the JSON API, and what the API sends is what its
handlers build: the response models (rueval.serve.responses) neither drop, add nor change a field."""

import json

from board_support import bearer
from fastapi.routing import APIRoute

from rueval.serve.api import router
from rueval.serve.service import submission_json


def test_every_api_route_documents_its_success_and_its_errors(client):
    document = client.get("/api/openapi.json").json()
    routes = [route for route in router.routes if isinstance(route, APIRoute)]
    api = {(route.path, verb.lower()) for route in routes for verb in route.methods}
    assert {(path, method) for path, operations in document["paths"].items() for method in operations} >= api
    assert len(api) == 4  # submit, see, publish, rank
    for path, method in api:
        answers = document["paths"][path][method]["responses"]
        success = [code for code in answers if code.startswith("2")]
        assert success, f"{method} {path}"
        for code in [*success, "4XX", "5XX"]:
            reference = answers[code]["content"]["application/json"]["schema"]["$ref"]
            model = document["components"]["schemas"][reference.removeprefix("#/components/schemas/")]
            assert model["properties"] and model["additionalProperties"] is False, f"{method} {path} {code}"
        assert "422" not in answers  # a request the API refuses is a 400 with {"error": ...}, documented as 4XX


def test_the_responses_are_the_handlers_json(client, service, tokens, worker, submission_zip):
    files = {"file": ("sub.zip", submission_zip("heuristic"), "application/zip")}
    answer = client.post("/api/submissions", headers=bearer(tokens["alpha"]), files=files, data={"public": "true"})
    id = answer.json()["id"]
    worker.score_next()
    submission, team = service.submission(id, None)
    built = json.loads(json.dumps(submission_json(submission, team, service.disclosure, "")))
    verdicts = ["distinguishable" in test for task in built["tasks"].values() for test in task["versus"].values()]
    assert any(verdicts) and not all(verdicts)  # a small task's comparisons carry none: left out, not null
    assert client.get(f"/api/submissions/{id}").json() == built
    board = client.get("/api/leaderboard").json()
    assert [row["id"] for row in board["rows"]] == [id] and board["references"]
    assert not board["standings_current"] and board["rows"][0]["standing"] == {}  # the queue was not yet seen empty
    assert board["rows"] == [json.loads(json.dumps(row.to_json())) for row in service.board()[0]]
    assert not worker.score_next()  # an empty queue: the standings brought up to date
    board = client.get("/api/leaderboard").json()
    assert board["standings_current"] and board["rows"][0]["standing"]["rcb"] == "leader"
    assert board["rows"] == [json.loads(json.dumps(row.to_json())) for row in service.board()[0]]
    assert board["references"] == [json.loads(json.dumps(row.to_json())) for row in service.reference_rows()]
