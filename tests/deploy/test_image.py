"""The image builds from deploy/Dockerfile and runs every process's prerequisites.

Marked ``docker``: skipped, with the reason, when no Docker engine answers. The
build installs the dependencies from PyPI, so it takes minutes the first time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploy.manifests import ROOT

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def image() -> Iterator[tuple[Any, str]]:
    import docker

    client = docker.from_env()
    tag = f"goaicore-test:{uuid.uuid4().hex[:8]}"
    client.images.build(path=str(ROOT), dockerfile="deploy/Dockerfile", tag=tag, rm=True)
    try:
        yield client, tag
    finally:
        client.images.remove(tag, force=True)
        client.close()


def _run(image: tuple[Any, str], *command: str, entrypoint: str | None = None) -> str:
    client, tag = image
    output: bytes = client.containers.run(
        tag, list(command), entrypoint=entrypoint, remove=True, stderr=True
    )
    return output.decode()


def test_runs_as_its_own_user_and_finds_code_and_schemas(image: tuple[Any, str]) -> None:
    check = (
        "import os, goaicore_store, goaicore_projector, goaicore_console.app;"
        "from goaicore.records.avro.schemas import schemas_dir;"
        "print(os.getuid(), schemas_dir(), os.environ['GOAICORE_BROKER_PROFILE'])"
    )
    out = _run(image, "-c", check, entrypoint="python")
    uid, schemas, profile = out.split()
    assert (uid, profile) == ("10001", "standard")
    assert schemas.startswith("/opt/goaicore/lib/")
    assert schemas.endswith("records/avro/schemas")


def test_the_cli_has_the_commands_deploy_runs(image: tuple[Any, str]) -> None:
    out = _run(image, "--help")
    for command in ("worker", "projector", "console", "create-topics", "verify"):
        assert command in out
