"""The committed OpenAPI document: served as it is, naming exactly the worker's routes, and
held to by the running worker (schemathesis, bounded in examples)."""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    CHECKS,
    CheckFunction,
    is_check_class,
    load_all_checks,
    not_a_server_error,
    positive_data_acceptance,
)

import goaicore_store.http
from goaicore.config import Settings
from goaicore_store.http import bodies, history_routes, operations, routes, streaming
from goaicore_store.http.auth import OPEN_PATHS, READY_PATH
from tests.chat_agent.helpers import ChatWorker, http
from tests.http.conftest import TOKENS

DOCUMENT = Path(goaicore_store.http.__file__).parent / "openapi.json"
schema = schemathesis.openapi.from_path(DOCUMENT)
load_all_checks()
EVERY_CHECK: list[CheckFunction] = [c for c in CHECKS.get_all() if not is_check_class(c)]
"""Every check the installed schemathesis has (its built-ins are functions), named so
none is left to its defaults."""
Pair = tuple[ChatWorker, ChatWorker]
ASK_OUTCOMES = frozenset({409, 410, 422, 502, 504})
"""An ask's answers to valid input that are not a 200: its reply's, or its wait's end."""


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


def test_schemathesis_runs_every_check_in_every_phase_but_the_stateful_one() -> None:
    """The conformance test below runs each check schemathesis has, in the phases that
    make its cases: examples, fuzzing and coverage (whose cases the unsupported_method
    and missing_required_header checks need). use_after_free and
    ensure_resource_availability judge a stateful run's linked calls, which this
    test (one call per case) does not make: they are on and find nothing to judge."""
    assert {check.__name__ for check in EVERY_CHECK} == {
        check.__name__ for check in CHECKS.get_all()
    }
    phases = schema.config.phases_for(operation=None)
    assert phases.examples.enabled
    assert phases.fuzzing.enabled
    assert phases.coverage.enabled


@schema.parametrize()
@pytest.mark.timeout(240)  # bounded in time as in examples: 15 per operation
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_worker_answers_as_its_document_says(case: schemathesis.Case[Any], pair: Pair) -> None:
    response = case.call(
        base_url=pair[1].url, headers={"Authorization": f"Bearer {TOKENS[1]}"}, timeout=90
    )
    excluded = []
    if (
        case.operation.path.endswith(("/messages", "/regenerate"))
        and response.status_code in ASK_OUTCOMES
    ):
        # An ask's 422 (a tool this worker does not offer), 502 (the LLM failed) and 504
        # (a deadline of a millisecond passed) answer valid input as documented; the
        # other checks still hold for it. A regenerate is an ask.
        excluded = [not_a_server_error, positive_data_acceptance]
    case.validate_response(response, checks=EVERY_CHECK, excluded_checks=excluded)
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


def _top_level_functions() -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The HTTP package's module-level functions by name: what a view may call."""
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for module in (routes, history_routes, bodies, operations, streaming):
        for node in ast.parse(inspect.getsource(module)).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[node.name] = node
    return functions


def _literal_status(node: ast.expr | None) -> set[int]:
    """``{status}`` when ``node`` is a whole-number literal, else nothing."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return {node.value}
    return set()


def _error_statuses(node: ast.AST, functions: dict[str, Any], seen: set[str]) -> set[int]:
    """The error statuses ``node`` answers: an ``ApiError(status, ...)``, a ``status=`` of
    400 or more, a reply's status (``reply_status``'s tables), and those of the package's
    functions it calls, followed through."""
    found: set[int] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in ("HTTP_STATUS", "REFUSED_STATUS"):
            found |= set(getattr(routes, child.id).values())
        if not isinstance(child, ast.Call):
            continue
        func = child.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name == "ApiError":
            found |= _literal_status(child.args[0] if child.args else None)
        for keyword in child.keywords:
            if keyword.arg == "status":
                found |= _literal_status(keyword.value)
        if name in functions and name not in seen:
            seen.add(name)
            found |= _error_statuses(functions[name], functions, seen)
    return {status for status in found if status >= 400}


CANNOT_ANSWER = {
    # store_errors maps every refusal a store has; these operations' store calls raise
    # only some of them.
    ("GET", "/v1/conversations/{conversation_id}"): {409},  # a read refuses nothing
    ("POST", "/v1/conversations/{conversation_id}/events"): {404, 409, 504},  # an append
    # checks its input only, and waits for nothing
    ("POST", "/v1/conversations/{conversation_id}/messages"): {404},  # an ask needs no
    # events: a new conversation starts with it
    ("DELETE", "/v1/requests/{request_id}"): {409, 504},  # a cancel is sent, not waited for
    ("PATCH", "/v1/conversations/{conversation_id}/metadata"): {404},  # metadata may
    # start a conversation
}
"""Statuses the walk below finds for an operation that it cannot answer, and why."""


def test_the_document_lists_every_error_status_each_operation_answers(tmp_path: Path) -> None:
    """Each view's code, walked through the functions it calls, against its documented
    responses: a status the code can answer and the document misses fails here, however
    unlikely the state it needs is for a generator (a deleted conversation's 409)."""
    from goaicore_store import create_app

    store = create_app(
        Settings(
            env={}, bootstrap_servers="kafka:9092", broker_profile="standard", data_dir=tmp_path
        )
    )
    functions = _top_level_functions()
    paths = json.loads(DOCUMENT.read_text())["paths"]
    checked = 0
    for path, view in store.app.web.views.items():
        for method in view.get_methods() - {"HEAD", "OPTIONS"}:
            handler = getattr(type(view), method.lower())
            tree = ast.parse(textwrap.dedent(inspect.getsource(handler)))
            answered = _error_statuses(tree, functions, set())
            if path not in OPEN_PATHS:
                answered.add(401)  # bearer_auth, before any view
            answered -= CANNOT_ANSWER.get((method, path), set())
            responses = paths[path][method.lower()]["responses"]
            documented = {int(status) for status in responses}
            assert answered <= documented, (method, path, sorted(answered - documented))
            checked += 1
    assert checked == len([m for item in paths.values() for m in item if m != "parameters"])


def test_every_documented_error_has_the_error_body() -> None:
    """Every error answer is the JSON error object (an ask's with its reply beside it);
    a 503 says when to come back. /ready's 503 is a probe's status, not an error."""
    errors = {"#/components/schemas/Error", "#/components/schemas/ReplyError"}
    for path, item in json.loads(DOCUMENT.read_text())["paths"].items():
        for method, operation in item.items():
            if method == "parameters" or path == READY_PATH:
                continue
            for status, response in operation["responses"].items():
                if int(status) < 400:
                    continue
                schema = response["content"]["application/json"]["schema"]
                assert schema["$ref"] in errors, (method, path, status)
                if status == "503":
                    assert "Retry-After" in response["headers"], (method, path)
