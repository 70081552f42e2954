"""``/metrics`` on running workers: goaicore's metrics and faust-streaming's sensors, all
``goaicore_*``, moving with the traffic that went through."""

from __future__ import annotations

import urllib.request
from collections import defaultdict

import pytest
from kafka import KafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from goaicore.clients import HistoryReader
from goaicore.config import Settings
from goaicore.records import AssistantTurn
from tests.chat_agent.helpers import ChatWorker, http
from tests.http.conftest import TOKENS
from tests.kafka.helpers import wait_until

Pair = tuple[ChatWorker, ChatWorker]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(pair: Pair) -> Samples:
    """Every sample of both workers, summed across them, by name and labels."""
    total: Samples = defaultdict(float)
    for worker in pair:
        request = urllib.request.Request(
            f"{worker.url}/metrics", headers={"Authorization": f"Bearer {TOKENS[0]}"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.headers["Content-Type"].startswith("text/plain")
            text = answer.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                total[(sample.name, tuple(sorted(sample.labels.items())))] += sample.value
    return total


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


def test_metrics_need_a_token_and_are_all_goaicore(pair: Pair) -> None:
    status, answer = http("GET", f"{pair[0].url}/metrics")
    assert (status, answer["error"]["type"]) == (401, "unauthorized")
    names = {name for name, _ in scrape(pair)}
    assert names
    assert all(name.startswith("goaicore_") for name in names), sorted(names)[:5]
    assert "goaicore_messages_received_total" in names  # faust-streaming's own sensor


def test_metrics_move_with_traffic(pair: Pair, topics: Settings) -> None:
    before = scrape(pair)
    base = f"{pair[0].url}/v1/conversations/metrics-1"
    for n in range(3):
        status, _ = http("POST", f"{base}/events", {"text": f"event {n}"}, token=TOKENS[0])
        assert status == 201
    for text in ("hello", 'call score_lookup {"team": "Leeds"}', "fail"):
        status, reply = http("POST", f"{base}/messages", {"text": text}, token=TOKENS[0])
        assert status in (200, 502), reply
    long = "lorem ipsum " * 10_000  # over the worker's 16,000-token budget: the next ask compacts
    other = f"{pair[1].url}/v1/conversations/metrics-2"
    assert http("POST", f"{other}/events", {"text": long}, token=TOKENS[0])[0] == 201
    status, _ = http("POST", f"{other}/messages", {"text": "sum up"}, token=TOKENS[0])
    assert status == 200
    producer = KafkaProducer(bootstrap_servers=topics.require_bootstrap())
    producer.send(topics.topic("events"), key=b"metrics-1", value=b"\xc3\x01garbage").get(10)
    producer.close()

    def moved(name: str, at_least: float = 1, **labels: str) -> bool:
        return value(scrape(pair), name, **labels) - value(before, name, **labels) >= at_least

    wait_until(lambda: moved("goaicore_dead_letters_total"), 60, "the dead letter was not counted")
    after = scrape(pair)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("goaicore_events_folded_total") >= 3 + 3 * 2
    assert grew("goaicore_fold_batch_seconds_count") >= 1
    assert grew("goaicore_snapshot_bytes_count") >= 1
    assert grew("goaicore_chat_requests_total", status="ok") == 3
    assert grew("goaicore_chat_requests_total", status="error") == 1
    assert grew("goaicore_turn_seconds_count") == 4
    assert grew("goaicore_llm_seconds_count", provider="openai") >= 5  # a tool call is two
    assert grew("goaicore_llm_errors_total", provider="openai", error="ProviderError") == 1
    assert grew("goaicore_llm_tokens_total", direction="in") > 0
    assert grew("goaicore_llm_tokens_total", direction="out") > 0
    assert grew("goaicore_tool_calls_total", tool="score_lookup") == 1
    assert grew("goaicore_compactions_total") >= 1
    assert grew("goaicore_read_your_writes_waits_total") == 4
    assert grew("goaicore_read_your_writes_seconds_count") == 4
    assert grew("goaicore_dead_letters_total", reason="truncated") == 1
    assert grew("goaicore_messages_received_total") >= 3
    events = topics.topic("events")  # a labelled sensor of faust-streaming's
    assert grew("goaicore_messages_received_per_topic_total", topic=events) >= 3 + 3 * 2
    # Every assistant turn is priced from the operator's table (GOAICORE_PRICES).
    with HistoryReader(topics) as history:
        turns = [
            event.body
            for conversation in ("metrics-1", "metrics-2")
            for event in history.events(conversation)
            if isinstance(event.body, AssistantTurn)
        ]
    assert len(turns) == 4  # hello; the tool call and its answer; sum up
    for turn in turns:
        assert turn.usage is not None
        expected = turn.usage.prompt_tokens * 2_000 + turn.usage.completion_tokens * 8_000
        assert turn.cost_usd_nanos == expected
    spent = sum(turn.cost_usd_nanos or 0 for turn in turns) / 1e9
    priced = grew("goaicore_llm_cost_usd_total", provider="openai", model="gpt-test")
    assert priced == pytest.approx(spent)
