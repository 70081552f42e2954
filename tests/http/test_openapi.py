"""The committed OpenAPI document: served as it is, naming exactly the worker's routes, and
held to by the running worker (schemathesis, bounded in examples)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error, positive_data_acceptance

import goaicore_store.http
from goaicore.config import Settings
from tests.chat_agent.helpers import ChatWorker, http
from tests.http.conftest import TOKENS

DOCUMENT = Path(goaicore_store.http.__file__).parent / "openapi.json"
schema = schemathesis.openapi.from_path(DOCUMENT)
Pair = tuple[ChatWorker, ChatWorker]


def test_the_worker_serves_the_committed_document(pair: Pair) -> None:
    status, served = http("GET", f"{pair[0].url}/v1/openapi.json", token=TOKENS[0])
    assert status == 200
    assert served == json.loads(DOCUMENT.read_text())
    assert served["openapi"] == "3.1.0"


def test_the_document_names_exactly_the_routes_and_methods_the_worker_has(
    tmp_path: Path,
) -> None:
    from goaicore_store import create_app

    store = create_app(
        Settings(
            env={}, bootstrap_servers="kafka:9092", broker_profile="standard", data_dir=tmp_path
        )
    )
    served = {
        (method, path)
        for path, view in store.app.web.views.items()
        for method in view.get_methods() - {"HEAD", "OPTIONS"}
    }
    documented = {
        (method.upper(), path)
        for path, item in json.loads(DOCUMENT.read_text())["paths"].items()
        for method in item
        if method != "parameters"
    }
    assert served == documented


@schema.parametrize()
@pytest.mark.timeout(240)  # bounded in time as in examples: 15 per operation
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_worker_answers_as_its_document_says(case: schemathesis.Case[Any], pair: Pair) -> None:
    excluded = []
    if case.operation.path.endswith(("/messages", "/regenerate")):
        # An ask's 422 (a tool this worker does not offer), 502 (the LLM failed) and 504
        # (a deadline of a millisecond passed) answer valid input as documented; only
        # the input checks below hold for it. A regenerate is an ask.
        excluded = [not_a_server_error, positive_data_acceptance]
    response = case.call(
        base_url=pair[1].url, headers={"Authorization": f"Bearer {TOKENS[1]}"}, timeout=90
    )
    case.validate_response(response, excluded_checks=excluded)
    assert response.status_code != 500, response.text
    if case.meta is not None and case.meta.generation.mode.is_positive:
        assert response.status_code not in (400, 413), response.text


def test_every_operation_that_writes_documents_the_traceparent_it_continues() -> None:
    document = json.loads(DOCUMENT.read_text())
    assert document["components"]["parameters"]["traceparent"]["in"] == "header"
    traced = {"$ref": "#/components/parameters/traceparent"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method in ("parameters", "get"):
                continue
            assert traced in operation.get("parameters", []), (method, path)
