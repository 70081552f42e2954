"""deploy/ checked without Docker: the files parse, and they agree with the code and each other.

- every process the system needs is there (3 Kafka brokers in one KRaft quorum,
  PostgreSQL, the topic job, 2 store workers, the projector, the auditor's console,
  each with a health check);
- each goaicore process gets every variable the code passes to that process, only
  variables the code knows, values its settings parser accepts, and the standard
  broker profile (never the embedded one);
- one image name and version, and probes on routes the processes serve;
- every process listening on 0.0.0.0 behind tokens (the workers, the console) gets
  the API's bearer tokens, required, never optional.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from goaicore.cli import build_parser
from goaicore.config import VARIABLES, Settings
from goaicore.devstack.console_process import ConsoleProcess
from goaicore.devstack.projector_process import ProjectorProcess
from goaicore.devstack.worker_process import WorkerProcess
from tests.conftest import docker_unavailable_reason
from tests.deploy.manifests import (
    COMPOSE,
    DEPLOY,
    DOCKERFILE,
    ROOT,
    compose,
    container_env,
    dockerfile,
    dockerfile_args,
    dockerfile_env,
    final_stage,
    healthcheck_command,
    interpolate,
    k8s_object,
    k8s_objects,
    option,
    pod_spec,
    project_version,
    pyproject,
    url_port_and_path,
)

VARIABLE_NAMES = frozenset(v.name for v in VARIABLES)
# Variables of the image itself, not goaicore settings.
RUNTIME_VARIABLES = frozenset({"PATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"})
WEB_PORT = 6066
CONSOLE_PORT = 8470
IMAGE = f"goaicore:{project_version()}"
KAFKA_SERVICES = ("kafka-1", "kafka-2", "kafka-3")
# The processes that serve content over HTTP behind the bearer tokens, and the option
# naming the address each listens on.
TOKEN_HOST_OPTIONS = {"worker": "--web-host", "console": "--host"}
TOKENS = "GOAICORE_HTTP_TOKENS"


# --- what the code says ----------------------------------------------------------------


def _child_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, process: type[WorkerProcess]
) -> set[str]:
    """The goaicore variables the dev stack passes to this kind of child process."""
    for name in VARIABLE_NAMES:
        monkeypatch.delenv(name, raising=False)
    captured: dict[str, Any] = {}

    class Capture:
        def __init__(self, command: list[str], env: dict[str, str], **_: Any) -> None:
            captured.update(env)

    monkeypatch.setattr(subprocess, "Popen", Capture)
    settings = Settings(
        env={},
        bootstrap_servers="kafka:9092",
        broker_profile="standard",
        database_url=None if process is WorkerProcess else "postgresql://u@db:5432/d",
        data_dir=tmp_path,
    )
    process(settings, tmp_path / "log").start()
    return set(captured) & VARIABLE_NAMES


@pytest.fixture(scope="module")
def needed() -> dict[str, set[str]]:
    """Per process kind, the variables it must be given in a deployment."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        tmp = Path(tempfile.mkdtemp())
        worker = _child_env(monkeypatch, tmp, WorkerProcess)
        projector = _child_env(monkeypatch, tmp, ProjectorProcess)
        console = _child_env(monkeypatch, tmp, ConsoleProcess)
    # The dev stack's broker has one node; a cluster needs the replication spelled out.
    deployed = {"GOAICORE_REPLICATION_FACTOR"}
    return {
        "worker": worker | deployed,
        "projector": projector | deployed,
        "create-topics": worker | deployed,
        # The dev stack's console listens on loopback; a deployed one on 0.0.0.0 needs
        # the tokens (the workers' are checked on their own: the CLI service has none).
        "console": console | deployed | {TOKENS},
    }


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The worker's HTTP route table, from the app itself (nothing is started)."""
    from goaicore_store import create_app

    settings = Settings(
        env={},
        bootstrap_servers="kafka:9092",
        broker_profile="standard",
        data_dir=tmp_path_factory.mktemp("routes"),
    )
    store = create_app(settings, web_port=WEB_PORT)
    return set(store.app.web.views)


@pytest.fixture(scope="module")
def console_routes() -> set[str]:
    """The console's route table, from the app itself (nothing is started)."""
    from goaicore_console.app import create_console

    app = create_console(_console_settings())
    return {resource.canonical for resource in app.router.resources()}


def _console_settings() -> Settings:
    return Settings(
        env={},
        database_url="postgresql://u@db:5432/d",  # never connected to: no page is asked
        http_tokens=("a-long-random-token",),
        data_dir=Path(tempfile.mkdtemp()),
    )


def test_needed_variables_are_derived_from_the_code(needed: dict[str, set[str]]) -> None:
    assert {"KAFKA_BOOTSTRAP_SERVERS", "GOAICORE_BROKER_PROFILE"} <= needed["worker"]
    assert {"DATABASE_URL", "GOAICORE_DB_SCHEMA"} <= needed["projector"]
    assert {"DATABASE_URL", "GOAICORE_DB_SCHEMA", "GOAICORE_TOPIC_PREFIX"} <= needed["console"]
    assert "DATABASE_URL" not in needed["worker"]


def test_the_worker_serves_health_and_readiness(routes: set[str]) -> None:
    assert {"/health", "/ready", "/v1/conversations/{conversation_id}"} <= routes


async def test_the_console_answers_health_without_a_token_and_nothing_else() -> None:
    """What its probes and health check see: /health open, pages behind the sign-in."""
    from aiohttp.test_utils import TestClient, TestServer

    from goaicore_console.app import create_console

    async with TestClient(TestServer(create_console(_console_settings()))) as client:
        health = await client.get("/health")
        assert health.status == 200
        assert await health.json() == {"status": "ok"}
        page = await client.get("/conversations", allow_redirects=False)
        assert page.status in (303, 401)


# --- the Dockerfile ------------------------------------------------------------------


def test_image_is_slim_non_root_and_runs_goaicore() -> None:
    final = final_stage()
    (base,) = [i.args for i in final if i.keyword == "FROM"]
    base = base.replace("${PYTHON_IMAGE}", dockerfile_args()["PYTHON_IMAGE"])
    assert base == "python:3.11-slim"
    (user,) = [i.args for i in final if i.keyword == "USER"]
    assert user.split(":")[0] not in ("root", "0")
    (entrypoint,) = [i.exec_form() for i in final if i.keyword == "ENTRYPOINT"]
    assert entrypoint == ["goaicore"]
    (command,) = [i.exec_form() for i in final if i.keyword == "CMD"]
    assert command[0] == "worker"
    assert option(command, "--web-host") == "0.0.0.0"
    labels = " ".join(i.args for i in final if i.keyword == "LABEL")
    assert f'org.opencontainers.image.version="{project_version()}"' in labels


def test_image_builds_the_package_with_its_schemas_and_services() -> None:
    # The schemas are package data (a link to schemas/, followed by the wheel build):
    # the build context needs schemas/, and the image no folder or variable for them.
    assert "GOAICORE_SCHEMAS_DIR" not in dockerfile_env()
    assert (ROOT / "goaicore/records/avro/schemas/ConversationEvent.avsc").is_file()
    build = [i.exec_form() for i in dockerfile() if i.keyword == "COPY" and i.stage == 0]
    assert {("goaicore", "./goaicore"), ("services", "./services"), ("schemas", "./schemas")} <= {
        tuple(copy) for copy in build
    }
    assert "services" in pyproject()["tool"]["setuptools"]["packages"]["find"]["where"]
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert {"!goaicore/", "!services/", "!schemas/", "!pyproject.toml"} <= set(ignore)


def test_image_installs_the_services_extras_and_no_dev_package() -> None:
    from goaicore.cli.services import EXTRAS

    installs = [i.args for i in dockerfile() if i.keyword == "RUN" and "pip install" in i.args]
    extras = {
        extra
        for run in installs
        for listed in re.findall(r"'\.\[([a-z,-]+)\]'", run)
        for extra in listed.split(",")
    }
    # Every deployable service's extra, and RocksDB for GOAICORE_TABLE_STORE=rocksdb.
    services = set(pyproject()["project"]["entry-points"]["goaicore.services"])
    assert services == set(EXTRAS) == {"worker", "projector", "console"}
    assert extras == {EXTRAS[service] for service in services} | {"rocksdb"}, installs
    assert not any("dev" in run or "[all" in run or "local" in run for run in installs)


def test_image_build_imports_every_service() -> None:
    """The final stage imports each service package: a missing one fails the build."""
    checks = [i.args for i in final_stage() if i.keyword == "RUN" and "import" in i.args]
    services = pyproject()["project"]["entry-points"]["goaicore.services"].values()
    for package in {entry.split(".")[0] for entry in services}:
        assert any(re.search(rf"\b{package}\b", check) for check in checks), package


def test_image_build_fetches_nothing_but_python_packages() -> None:
    assert not DOCKERFILE.read_text().startswith("# syntax=")  # a frontend image pull
    for instruction in dockerfile():
        assert instruction.keyword != "ADD", "ADD can fetch URLs; COPY cannot"
        if instruction.keyword == "RUN":
            for tool in ("curl", "wget", "apt-get", "git "):
                assert tool not in instruction.args, f"RUN uses {tool.strip()}"


def test_image_environment_is_known_to_the_code() -> None:
    env = dockerfile_env()
    assert set(env) <= VARIABLE_NAMES | RUNTIME_VARIABLES
    assert env["GOAICORE_BROKER_PROFILE"] == "standard"


def test_image_port_and_health_check_agree_with_the_worker(routes: set[str]) -> None:
    final = final_stage()
    (expose,) = [i.args for i in final if i.keyword == "EXPOSE"]
    assert int(expose) == WEB_PORT
    (command,) = [i.exec_form() for i in final if i.keyword == "CMD"]
    assert option(command, "--web-port") == str(WEB_PORT)
    port, path = url_port_and_path(healthcheck_command())
    assert (port, path) == (WEB_PORT, "/health")
    assert path in routes


# --- the compose stack ---------------------------------------------------------------


def _services() -> dict[str, Any]:
    services: dict[str, Any] = compose()["services"]
    return services


def _goaicore_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in _services().items() if str(s.get("image", "")).startswith("goaicore")}


def _role(service: dict[str, Any]) -> str:
    return str(service["command"][0])


def _env(service: dict[str, Any]) -> dict[str, str]:
    return {k: interpolate(v) for k, v in (service.get("environment") or {}).items()}


def test_compose_has_every_process_the_system_needs() -> None:
    services = _services()
    kafka = [n for n, s in services.items() if str(s["image"]).startswith("apache/kafka:")]
    assert sorted(kafka) == list(KAFKA_SERVICES)
    assert str(services["postgres"]["image"]).startswith("postgres:")
    roles = [_role(s) for s in _goaicore_services().values() if "profiles" not in s]
    assert sorted(roles) == ["console", "create-topics", "projector", "worker", "worker"]
    for name, service in services.items():
        if name == "create-topics" or "profiles" in service:
            continue
        assert "test" in service["healthcheck"], f"{name} has no health check"


def test_compose_runs_the_kafka_version_the_tests_run() -> None:
    """One pinned Apache Kafka version: the local launcher's is the compose stack's."""
    from goaicore.kafka.apache import KAFKA_VERSION

    images = {str(_services()[name]["image"]) for name in KAFKA_SERVICES}
    assert images == {f"apache/kafka:{KAFKA_VERSION}"}


def test_compose_kafka_is_one_kraft_quorum_of_three() -> None:
    services = _services()
    envs = {name: _env(services[name]) for name in KAFKA_SERVICES}
    voters = {env["KAFKA_CONTROLLER_QUORUM_VOTERS"] for env in envs.values()}
    assert len(voters) == 1
    (quorum,) = voters
    assert {v.split("@")[0] for v in quorum.split(",")} == {"1", "2", "3"}
    assert len({env["CLUSTER_ID"] for env in envs.values()}) == 1
    assert sorted(int(env["KAFKA_NODE_ID"]) for env in envs.values()) == [1, 2, 3]
    for name, env in envs.items():
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        voter = f"{env['KAFKA_NODE_ID']}@{name}:"
        assert voter in quorum, f"{name} is not the voter of its node id"
        assert env["KAFKA_ADVERTISED_LISTENERS"] == f"PLAINTEXT://{name}:9092"
        assert env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
        assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
        assert services[name]["volumes"], f"{name} keeps no data"


def test_compose_starts_things_in_order() -> None:
    services = _services()
    topics = services["create-topics"]
    assert {n: d["condition"] for n, d in topics["depends_on"].items()} == dict.fromkeys(
        KAFKA_SERVICES, "service_healthy"
    )
    for name, service in _goaicore_services().items():
        if name == "create-topics":
            continue
        depends = service["depends_on"]
        assert depends["create-topics"]["condition"] == "service_completed_successfully"
        if _role(service) in ("projector", "console"):
            assert depends["postgres"]["condition"] == "service_healthy", name


def test_compose_gives_each_process_what_the_code_needs(needed: dict[str, set[str]]) -> None:
    bootstrap = ",".join(f"{n}:9092" for n in KAFKA_SERVICES)
    image_env = dockerfile_env()
    for name, service in _goaicore_services().items():
        env = _env(service)
        assert set(env) <= VARIABLE_NAMES, f"{name}: unknown {set(env) - VARIABLE_NAMES}"
        role = _role(service) if "profiles" not in service else "worker"
        missing = needed[role] - set(env) - set(image_env)
        assert not missing, f"{name} ({role}) lacks {sorted(missing)}"
        settings = Settings(env={**image_env, **env})  # every value parses
        assert settings.broker_profile == "standard", name
        assert settings.replication_factor == 3, name
        assert settings.bootstrap_servers == bootstrap, name
        if role in ("projector", "console"):
            assert settings.require_database_url().endswith("@postgres:5432/goaicore")
        assert not any("embedded" in value for value in env.values()), name


def test_compose_workers_use_the_image_port_and_reach_each_other(routes: set[str]) -> None:
    workers = {n: s for n, s in _goaicore_services().items() if _role(s) == "worker"}
    assert len(workers) == 2
    partitions = Settings(env=_env(next(iter(workers.values())))).partitions
    assert partitions >= len(workers)
    for name, service in workers.items():
        command = [str(part) for part in service["command"]]
        assert option(command, "--web-port") == str(WEB_PORT)
        assert option(command, "--web-host") == "0.0.0.0"
        assert option(command, "--canonical-url") == f"http://{name}:{WEB_PORT}"
        assert [p.split(":")[-1] for p in service["ports"]] == [str(WEB_PORT)]
        port, path = url_port_and_path(service["healthcheck"]["test"])
        assert (port, path) == (WEB_PORT, "/ready")
        assert path in routes


def test_compose_console_is_published_and_checked_on_its_health(
    console_routes: set[str],
) -> None:
    [service] = [s for s in _goaicore_services().values() if _role(s) == "console"]
    command = [str(part) for part in service["command"]]
    assert option(command, "--port") == str(CONSOLE_PORT)
    assert option(command, "--host") == "0.0.0.0"
    assert "--insecure-http" not in command
    assert [p.split(":")[-1] for p in service["ports"]] == [str(CONSOLE_PORT)]
    port, path = url_port_and_path(service["healthcheck"]["test"])
    assert (port, path) == (CONSOLE_PORT, "/health")
    assert path in console_routes


def test_compose_requires_tokens_where_a_process_listens_on_all_addresses() -> None:
    """The workers and the console refuse to start without tokens on 0.0.0.0: compose
    refuses first, with a message, when GOAICORE_HTTP_TOKENS is unset."""
    listening = {
        name: service
        for name, service in _goaicore_services().items()
        if _role(service) in TOKEN_HOST_OPTIONS
        and option([str(p) for p in service["command"]], TOKEN_HOST_OPTIONS[_role(service)])
        == "0.0.0.0"
    }
    assert sorted(_role(s) for s in listening.values()) == ["console", "worker", "worker"]
    for name, service in listening.items():
        tokens = str(service["environment"][TOKENS])
        assert tokens.startswith("${GOAICORE_HTTP_TOKENS:?"), name
        if _role(service) == "console":  # Prometheus's token opens no page
            assert "GOAICORE_METRICS_TOKEN" not in tokens


def test_compose_and_k8s_commands_parse_as_the_cli_defines_them() -> None:
    parser = build_parser()
    commands = [
        [str(part) for part in service["command"]]
        for service in _goaicore_services().values()
        if "profiles" not in service
    ]
    commands += [[str(a) for a in c["args"]] for w in _workloads() for c in _containers(w)]
    for command in commands:
        parser.parse_args(command)


def test_compose_builds_and_names_one_image() -> None:
    for name, service in _goaicore_services().items():
        assert service["image"] == IMAGE, name
        build = service["build"]
        assert (COMPOSE.parent / build["context"]).resolve() == ROOT
        assert (ROOT / build["dockerfile"]).resolve() == (DEPLOY / "Dockerfile").resolve()


def test_docker_compose_accepts_the_file() -> None:
    reason = docker_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI on PATH")
    done = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


# --- Kubernetes ----------------------------------------------------------------------


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = pod_spec(obj)["containers"]
    return containers


def _workloads() -> list[dict[str, Any]]:
    return [o for o in k8s_objects() if o["kind"] in ("Deployment", "StatefulSet", "Job")]


def test_kustomization_lists_every_object_the_system_needs() -> None:
    kinds = {(o["kind"], o["metadata"]["name"]) for o in k8s_objects()}
    assert {
        ("Namespace", "goaicore"),
        ("ConfigMap", "goaicore-config"),
        ("Secret", "goaicore-secrets"),
        ("Job", "goaicore-create-topics"),
        ("Deployment", "goaicore-worker"),
        ("Service", "goaicore-worker"),
        ("PodDisruptionBudget", "goaicore-worker"),
        ("Deployment", "goaicore-projector"),
        ("Deployment", "goaicore-console"),
        ("Service", "goaicore-console"),
    } <= kinds
    roles = sorted(_containers(w)[0]["args"][0] for w in _workloads())
    assert roles == ["console", "create-topics", "projector", "worker"]


def test_k8s_replicas_fit_the_partitions_and_one_projector_writes() -> None:
    worker = k8s_object("Deployment", "goaicore-worker")
    settings = Settings(env=container_env(worker, _containers(worker)[0]))
    assert 2 <= worker["spec"]["replicas"] <= settings.partitions
    assert k8s_object("Deployment", "goaicore-projector")["spec"]["replicas"] == 1
    assert k8s_object("Deployment", "goaicore-console")["spec"]["replicas"] >= 1
    budget = k8s_object("PodDisruptionBudget", "goaicore-worker")["spec"]
    assert budget["selector"]["matchLabels"] == worker["spec"]["selector"]["matchLabels"]
    assert budget["maxUnavailable"] == 1


def test_k8s_gives_each_process_what_the_code_needs(needed: dict[str, set[str]]) -> None:
    image_env = dockerfile_env()
    secret = k8s_object("Secret", "goaicore-secrets")["stringData"]
    for workload in _workloads():
        for container in _containers(workload):
            role = container["args"][0]
            env = container_env(workload, container)
            own = set(env) - {"POD_IP"}
            assert own <= VARIABLE_NAMES, f"{role}: unknown {own - VARIABLE_NAMES}"
            missing = needed[role] - set(env) - set(image_env)
            assert not missing, f"{role} lacks {sorted(missing)}"
            settings = Settings(env={**image_env, **{k: env[k] for k in own}})
            assert settings.broker_profile == "standard", role
            assert settings.replication_factor == 3, role
            assert not any("embedded" in value for value in env.values()), role
            for item in container.get("env", []):
                ref = item.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in secret, f"{role}: no {ref['key']} in the Secret"


def test_k8s_images_are_the_one_image() -> None:
    for workload in _workloads():
        for container in _containers(workload):
            assert container["image"] == IMAGE, workload["metadata"]["name"]
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    assert kustomization["images"] == [{"name": "goaicore", "newTag": project_version()}]


def test_k8s_pods_are_non_root_with_requests_and_limits() -> None:
    for workload in _workloads():
        name = workload["metadata"]["name"]
        pod = pod_spec(workload)
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        for container in pod["containers"]:
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), name
            assert {"cpu", "memory"} <= set(resources["limits"]), name
            assert container["securityContext"] == {
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "capabilities": {"drop": ["ALL"]},
            }, name


def test_k8s_deployments_have_probes_on_their_own_ports() -> None:
    """Every Deployment is restarted when it stops answering /health, and one a Service
    routes to is taken out of it while not ready."""
    routed = [o["spec"]["selector"] for o in k8s_objects() if o["kind"] == "Service"]
    for deployment in (o for o in k8s_objects() if o["kind"] == "Deployment"):
        name = deployment["metadata"]["name"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        probes = ["livenessProbe"]
        if any(selector.items() <= labels.items() for selector in routed):
            probes.append("readinessProbe")
        for container in _containers(deployment):
            ports = {p["name"]: p["containerPort"] for p in container["ports"]}
            for probe in probes:
                get = container[probe]["httpGet"]
                assert get["port"] in ports, f"{name}: {probe} on an undeclared port"
                assert get["path"] in ("/health", "/ready"), f"{name}: {probe}"
            assert container["livenessProbe"]["httpGet"]["path"] == "/health", name


def test_k8s_tokens_come_from_the_secret_where_a_process_listens_on_all_addresses() -> None:
    secret = k8s_object("Secret", "goaicore-secrets")["stringData"]
    assert TOKENS in secret
    listening = []
    for workload in _workloads():
        for container in _containers(workload):
            args = [str(a) for a in container["args"]]
            host = TOKEN_HOST_OPTIONS.get(args[0])
            if host is None or option(args, host) != "0.0.0.0":
                continue
            listening.append(args[0])
            assert "--insecure-http" not in args
            [item] = [e for e in container["env"] if e["name"] == TOKENS]
            ref = item["valueFrom"]["secretKeyRef"]
            # Not optional: a missing key stops the pod from starting, not the auth.
            assert ref == {"name": "goaicore-secrets", "key": TOKENS}, args[0]
    assert sorted(listening) == ["console", "worker"]


def test_k8s_worker_port_and_probes_hit_real_routes(routes: set[str]) -> None:
    worker = k8s_object("Deployment", "goaicore-worker")
    (container,) = _containers(worker)
    args = [str(a) for a in container["args"]]
    assert option(args, "--web-port") == str(WEB_PORT)
    assert option(args, "--web-host") == "0.0.0.0"
    assert option(args, "--canonical-url") == f"http://$(POD_IP):{WEB_PORT}"
    assert any(e["name"] == "POD_IP" for e in container["env"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": WEB_PORT}
    paths = {}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        port = ports.get(get["port"], get["port"])
        assert port == WEB_PORT, probe
        assert get["path"] in routes, probe
        paths[probe] = get["path"]
    assert paths == {
        "startupProbe": "/health",
        "livenessProbe": "/health",
        "readinessProbe": "/ready",
    }
    service = k8s_object("Service", "goaicore-worker")["spec"]
    assert service["selector"] == worker["spec"]["selector"]["matchLabels"]
    assert [p["targetPort"] for p in service["ports"]] == ["http"]


def test_k8s_console_port_probes_and_service(console_routes: set[str]) -> None:
    console = k8s_object("Deployment", "goaicore-console")
    (container,) = _containers(console)
    args = [str(a) for a in container["args"]]
    assert option(args, "--port") == str(CONSOLE_PORT)
    assert option(args, "--host") == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": CONSOLE_PORT}
    for probe in ("livenessProbe", "readinessProbe"):
        get = container[probe]["httpGet"]
        assert (ports[get["port"]], get["path"]) == (CONSOLE_PORT, "/health"), probe
        assert get["path"] in console_routes
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "goaicore-secrets",
        "key": "DATABASE_URL",
    }
    assert container["envFrom"] == [{"configMapRef": {"name": "goaicore-config"}}]
    service = k8s_object("Service", "goaicore-console")["spec"]
    assert service.get("type", "ClusterIP") == "ClusterIP"
    assert service["selector"] == console["spec"]["selector"]["matchLabels"]
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(CONSOLE_PORT, "http")]


def test_operations_guide_is_linked_and_its_commands_exist() -> None:
    guide = (ROOT / "docs" / "operations.md").read_text()
    assert "docs/operations.md" in (ROOT / "README.md").read_text()
    assert "docs/operations.md" in (DEPLOY / "README.md").read_text()
    parser = build_parser()
    # The commands the guide tells an operator to run parse as written.
    for command in (
        "goaicore create-topics",
        "goaicore projection clear --schema goaicore\n  --prefix goaicore",
        "goaicore verify --db",
        "goaicore console --port 8470 --host 0.0.0.0",
    ):
        assert command in guide, command
        parser.parse_args(command.split()[1:])  # split() also joins a wrapped line
    parser.parse_args(["worker", "--web-port", "6066", "--web-host", "0.0.0.0"])


def test_the_projector_is_checked_on_its_own_status_port() -> None:
    [service] = [s for s in _goaicore_services().values() if _role(s) == "projector"]
    command = [str(part) for part in service["command"]]
    assert option(command, "--http-port") == "6067"
    assert option(command, "--http-host") == "0.0.0.0"
    assert url_port_and_path(service["healthcheck"]["test"]) == (6067, "/health")
    (container,) = _containers(k8s_object("Deployment", "goaicore-projector"))
    args = [str(a) for a in container["args"]]
    assert option(args, "--http-port") == "6067"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    probe = container["livenessProbe"]["httpGet"]
    assert (ports[probe["port"]], probe["path"]) == (6067, "/health")


# --- monitoring ------------------------------------------------------------------------


def _metric_names(tmp_path: Path) -> set[str]:
    """Every sample name the worker's and the projector's registries can expose."""
    from goaicore_projector.observe import ProjectorMetrics
    from goaicore_store import create_app

    settings = Settings(
        env={}, bootstrap_servers="kafka:9092", broker_profile="standard", data_dir=tmp_path
    )
    registries = [create_app(settings).metrics.registry, ProjectorMetrics().registry]
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix
        for registry in registries
        for family in registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def test_prometheus_scrapes_every_worker_and_the_projector_where_they_serve() -> None:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    workers = sorted(n for n, s in _goaicore_services().items() if _role(s) == "worker")
    worker_job = jobs["goaicore-worker"]
    assert worker_job["static_configs"][0]["targets"] == [f"{n}:{WEB_PORT}" for n in workers]
    assert worker_job["metrics_path"] == "/metrics"
    # The token Prometheus sends is the compose secret the workers accept.
    secret = worker_job["authorization"]["credentials_file"]
    prometheus = _services()["prometheus"]
    assert secret == f"/run/secrets/{prometheus['secrets'][0]}"
    assert compose()["secrets"]["metrics_token"]["environment"] == "GOAICORE_METRICS_TOKEN"
    for name in workers:
        assert "${GOAICORE_METRICS_TOKEN" in str(
            _services()[name]["environment"]["GOAICORE_HTTP_TOKENS"]
        )
    assert jobs["goaicore-projector"]["static_configs"][0]["targets"] == ["projector:6067"]
    assert prometheus["profiles"] == _services()["grafana"]["profiles"] == ["monitoring"]


def test_the_dashboard_queries_only_metrics_that_exist(tmp_path: Path) -> None:
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "goaicore.json").read_text())
    used = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"goaicore_[a-z_]+", target["expr"])
    }
    assert len(used) >= 15
    assert used <= _metric_names(tmp_path), sorted(used - _metric_names(tmp_path))
    provider = yaml.safe_load(
        (DEPLOY / "grafana" / "provisioning" / "dashboards" / "goaicore.yml").read_text()
    )
    mounted = _services()["grafana"]["volumes"]
    assert f"./grafana/dashboards:{provider['providers'][0]['options']['path']}:ro" in mounted
