"""The built wheel works alone: its schemas inside, names of its own, extras named when missing.

The wheel is built from a copy of this checkout (pip, with build isolation, as a
user's pip would; the copy keeps the build's scratch folders out of the tree) and
installed in a fresh virtual environment with its core dependencies only, then used
from a folder with no checkout around.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
PACKAGED_SCHEMAS = "goaicore/records/avro/schemas"
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    "bench-results",
)


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source") / "goaicore"
    shutil.copytree(ROOT, source, symlinks=True, ignore=_NOT_SOURCE)
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, source)
    assert built.returncode == 0, built.stderr[-3000:]
    (found,) = out.glob("goaicore-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment's python with the wheel and its core dependencies alone."""
    env = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    added = _run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel)
    assert added.returncode == 0, added.stderr[-3000:]
    return python


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_every_schema_file(wheel: Path) -> None:
    names = set(_names(wheel))
    sources = [p.relative_to(SCHEMAS).as_posix() for p in SCHEMAS.rglob("*") if p.is_file()]
    assert sources, "no schema files in the checkout"
    missing = [s for s in sources if f"{PACKAGED_SCHEMAS}/{s}" not in names]
    assert missing == []
    assert "goaicore/kafka/apache/pom.xml" in names
    # The peers suite's Kafka Streams app and the pom of its jars.
    assert "goaicore/bench/java/pom.xml" in names
    assert "goaicore/bench/java/KafkaStreamsFold.java" in names
    # The console's pages and style ship with it.
    assert "goaicore_console/templates/conversation.html" in names
    assert "goaicore_console/templates/events/UserMessage.html" in names
    assert "goaicore_console/static/console.css" in names


def test_the_wheel_installs_no_generic_top_level_name(wheel: Path) -> None:
    tops = {
        name.split("/")[0]
        for name in _names(wheel)
        if not name.split("/")[0].endswith(".dist-info")
    }
    assert tops == {"goaicore", "goaicore_store", "goaicore_projector", "goaicore_console"}


def test_an_installed_wheel_encodes_and_decodes_every_record_type(
    installed: Path, tmp_path: Path
) -> None:
    script = textwrap.dedent(
        """
        import dataclasses, sys
        from datetime import UTC, datetime
        import goaicore
        from goaicore import (
            ChatReply, ReplyStatus, decode_chat_reply, decode_chat_request, decode_event,
            decode_snapshot, encode_chat_reply, encode_chat_request, encode_event,
            encode_snapshot, new_chat_request, new_event,
        )
        from goaicore.fold import fold
        from goaicore.records import (
            EVENT_BODY_TYPES, AssistantTurn, CompactionApplied, ConversationDeleted,
            ConversationErased,
            ConversationForked, ConversationReset, ConversationRewound, GameEvent, LogPosition,
            MetadataSet, SnapshotMessage, ToolCall, ToolResult, TurnFailed, UserMessage,
        )
        from goaicore.records.avro.schemas import schemas_dir

        assert "site-packages" in goaicore.__file__, goaicore.__file__
        assert "site-packages" in str(schemas_dir()), schemas_dir()
        bodies = [
            UserMessage(text="hello"),
            AssistantTurn(text="", tool_calls=(ToolCall(id="c1", name="t", arguments="{}"),)),
            ToolResult(
                tool_call_id="c1", name="t", content="ok", provider="openai-responses",
                raw_json='{"call_id": "c1", "output": "ok", "type": "function_call_output"}',
            ),
            GameEvent(kind="check-in", text="Player checked in", attributes={"venue": "York"}),
            CompactionApplied(strategy="keep-last", first_index=0, last_index=0),
            TurnFailed(request_id="r1", kind="timeout"),
            MetadataSet(title="Quest", tags=("a",), attributes={"k": "v"}),
            ConversationRewound(until_offset=-1, reason="undo"),
            ConversationReset(reason="test"),
            ConversationForked(
                source_conversation_id="conv-0", source_partition=0, until_offset=3,
                messages=(SnapshotMessage(role="user", text="hi"),),
            ),
            ConversationDeleted(reason="test"),
            ConversationErased(reason="test"),
        ]
        assert {type(b) for b in bodies} == set(EVENT_BODY_TYPES), EVENT_BODY_TYPES
        snapshot = None
        for offset, body in enumerate(bodies):
            event = new_event("conv-1", body, source="wheel-test")
            assert decode_event(encode_event(event)) == event
            snapshot = fold(snapshot, event, LogPosition(partition=0, offset=offset))
        assert decode_snapshot(encode_snapshot(snapshot)) == snapshot
        request = new_chat_request("conv-1", "hi")
        assert decode_chat_request(encode_chat_request(request)) == request
        reply = ChatReply(request_id=request.request_id, conversation_id="conv-1",
                          status=ReplyStatus.OK, text="hello")
        assert decode_chat_reply(encode_chat_reply(reply)) == reply
        print("records ok", len(bodies) + 3)
        """
    )
    result = _run(installed, "-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "records ok 15"


def test_a_missing_extra_is_named(installed: Path, tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        from goaicore.extras import MissingExtraError
        from goaicore.conversation.providers import AnthropicProvider, OpenAIProvider
        for provider, extra in ((OpenAIProvider, "openai"), (AnthropicProvider, "anthropic")):
            try:
                provider("some-model", api_key="k")
            except MissingExtraError as err:
                assert f"goaicore[{extra}]" in str(err), err
            else:
                raise AssertionError(f"{provider.__name__} built without its SDK")
        print("named")
        """
    )
    result = _run(installed, "-c", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "named"
    goaicore = installed.parent / "goaicore"
    for command, extra in (("worker", "worker"), ("projector", "projector")):
        ran = _run(goaicore, command, cwd=tmp_path)
        assert ran.returncode == 3, ran.stderr  # a missing extra: configuration
        assert f"goaicore[{extra}]" in ran.stderr, ran.stderr
        assert "Traceback" not in ran.stderr
