"""Read deploy/: the Dockerfile's instructions, the compose file, the Kubernetes objects.

Kept apart from the tests so each check reads as one statement about the files.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"

# ${NAME}, ${NAME:-default} and ${NAME:?error when unset}.
_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-?])([^}]*))?\}")


def project_version() -> str:
    version: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    return version


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    stage: int

    def exec_form(self) -> list[str]:
        """The JSON (exec) form's list, or the shell form split like a shell would."""
        text = self.args.strip()
        if text.startswith("["):
            value: list[str] = json.loads(text)
            return value
        return shlex.split(text)


def dockerfile() -> list[Instruction]:
    """Instructions in order, continuation lines joined, comments dropped."""
    instructions: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, args = full.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(keyword, args.strip(), stage))
    return instructions


def final_stage() -> list[Instruction]:
    instructions = dockerfile()
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def dockerfile_env() -> dict[str, str]:
    """ENV of the final stage (``ENV A=1 B=2`` form)."""
    env: dict[str, str] = {}
    for instruction in final_stage():
        if instruction.keyword == "ENV":
            for item in shlex.split(instruction.args):
                name, _, value = item.partition("=")
                env[name] = value
    return env


def dockerfile_args() -> dict[str, str]:
    """Build ARGs with defaults, to resolve ``FROM ${PYTHON_IMAGE}``."""
    args: dict[str, str] = {}
    for instruction in dockerfile():
        if instruction.keyword == "ARG" and "=" in instruction.args:
            name, _, value = instruction.args.partition("=")
            args[name.strip()] = value.strip()
    return args


def healthcheck_command() -> list[str]:
    """The final stage's HEALTHCHECK command (after its options)."""
    (check,) = [i for i in final_stage() if i.keyword == "HEALTHCHECK"]
    _, _, command = check.args.partition("CMD ")
    return Instruction("CMD", command, check.stage).exec_form()


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def interpolate(value: Any) -> str:
    """A compose value as the container sees it with nothing set on the host."""
    return _INTERPOLATION.sub(lambda m: m.group(3) if m.group(2) == "-" else "", str(value))


def k8s_objects() -> list[dict[str, Any]]:
    """Every object the kustomization lists, in its order."""
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for resource in kustomization["resources"]:
        objects.extend(d for d in yaml.safe_load_all((K8S / resource).read_text()) if d)
    return objects


def k8s_object(kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in k8s_objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def container_env(obj: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """The environment a container gets: its ConfigMaps and Secrets, then its own env."""
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in k8s_objects()}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(by_name["ConfigMap", source["configMapRef"]["name"]]["data"])
        if "secretRef" in source:
            env.update(by_name["Secret", source["secretRef"]["name"]]["stringData"])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "secretKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = by_name["Secret", ref["name"]]["stringData"][ref["key"]]
        elif "configMapKeyRef" in item.get("valueFrom", {}):
            ref = item["valueFrom"]["configMapKeyRef"]
            env[item["name"]] = by_name["ConfigMap", ref["name"]]["data"][ref["key"]]
        else:
            env[item["name"]] = "<from the pod>"
    return env


def option(command: list[str], flag: str) -> str | None:
    """The value after ``flag`` in a command line, or None."""
    if flag in command:
        return command[command.index(flag) + 1]
    return None


def url_port_and_path(command: list[str]) -> tuple[int, str]:
    """Port and path of the one http:// URL in a health check command."""
    (url,) = re.findall(r"http://[^'\"\s]+", " ".join(command))
    parts = urlsplit(url)
    assert parts.port is not None, url
    return parts.port, parts.path
