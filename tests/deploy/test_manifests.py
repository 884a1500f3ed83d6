"""The deployment files under ``deploy/`` (``compose.yaml`` and the Kubernetes manifests in
``deploy/kubernetes/``) are valid, and every command, flag, port and setting they use is one
the rest of the suite starts:

* every manifest validates against the schemas of Kubernetes :data:`KUBERNETES_VERSION`
  (``kubernetes-validate``, strict: an unknown or misspelt field fails; the schemas ship with
  the package, so this runs offline), and ``kustomization.yaml`` lists every file;
* every ``boxfish`` command uses only flags its ``boxfish <command> --help`` lists, with values
  the CLI's parser takes; every environment variable is a setting of
  :class:`boxfish.service.config.Settings` whose value parses;
* the API's readiness probe is ``/readyz`` and its liveness probe ``/healthz``, routes of the
  app, on the port ``boxfish serve`` listens on;
* every container has resource requests and a CPU limit, and the search threads of a
  container's analysis processes, times their number, fit within its limit (Compose's
  too); every Service, PodDisruptionBudget and StatefulSet finds the pods it names; every
  ConfigMap or Secret referenced exists; the Redis addresses of the settings are Services in
  front of a ``redis-server`` on that port, a cluster node for ``REDIS_URL`` and a plain
  Redis for the queue; the workers' grace periods outlast their own stop timeouts;
* the Compose file's Boxfish services run exactly the Kubernetes containers' commands, build
  the repository's Dockerfile, and use real settings; docs/compose.md shows it as it is;
* end to end, the API, worker and webhook-worker containers' commands, run as processes of
  this host (not in pods: no Kubernetes runs here) with the ConfigMap's settings (its Redis
  addresses pointed at a local Redis Cluster and queue Redis), serve a game and an analysis.

Each check is a function returning its problems (an empty list when there are none); small
tests with a deliberately broken input show that each one catches what it is there for.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

import kubernetes_validate
import pydantic
import pytest
import yaml

from boxfish.service.config import Settings
from boxfish.service.runtime import cli
from boxfish.service.runtime.embedded_redis import EmbeddedRedis, free_port
from boxfish.service.store.keys import KeySpace

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"
COMPOSE = DEPLOY / "compose.yaml"
DOCS = ROOT / "docs"

#: The Kubernetes version whose schemas the manifests must satisfy (the newest that
#: kubernetes-validate, as pinned in pyproject.toml, ships).
KUBERNETES_VERSION = "1.37"

#: The image built from the repository's Dockerfile, as the manifests and Compose name it.
IMAGE = "boxfish"
#: The uid of the user ``boxfish`` the image runs as.
IMAGE_UID = 10001

#: The Compose services that run Boxfish, and the Kubernetes workload of the same command.
COMPOSE_TO_KUBERNETES = {"api": "boxfish-api", "worker": "boxfish-worker",
                         "webhook-worker": "boxfish-webhook-worker",
                         "projector": "boxfish-projector"}

#: The settings that name a Redis (checked against the Services or Compose services).
REDIS_URL_SETTINGS = ("REDIS_URL", "BOXFISH_QUEUE_REDIS_URL")

WORKLOADS = ("Deployment", "StatefulSet", "Job", "DaemonSet")


# -- reading the files ---------------------------------------------------------------------------


def kustomization() -> dict:
    return yaml.safe_load((KUBE / "kustomization.yaml").read_text())


def manifests() -> list[dict]:
    """Every document of every file ``kustomization.yaml`` lists, in order."""
    docs = []
    for name in kustomization()["resources"]:
        docs += [d for d in yaml.safe_load_all((KUBE / name).read_text()) if d is not None]
    return docs


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def named(docs: list[dict], kind: str, name: str) -> dict:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def pod_spec(doc: dict) -> dict | None:
    """The pod template's spec of a workload; None for any other kind."""
    if doc["kind"] not in WORKLOADS:
        return None
    return doc["spec"]["template"]["spec"]


def pod_labels(doc: dict) -> dict:
    return doc["spec"]["template"]["metadata"].get("labels", {})


def containers(doc: dict) -> list[dict]:
    spec = pod_spec(doc) or {}
    return spec.get("initContainers", []) + spec.get("containers", [])


def argv(container: dict) -> list[str]:
    """What the container runs: its ``command`` and ``args`` (the image's entrypoint, if it
    has one, runs ``args``; the Boxfish image has none)."""
    return list(container.get("command", [])) + list(container.get("args", []))


def is_boxfish(image: str) -> bool:
    """Whether ``image`` is the Boxfish image, under any registry and tag."""
    return image.rsplit("/", 1)[-1].split(":")[0] == IMAGE


def boxfish_containers(docs: list[dict]) -> dict[str, dict]:
    """Workload name -> its container that runs the Boxfish image."""
    found = {}
    for doc in docs:
        for c in containers(doc):
            if is_boxfish(c["image"]):
                assert doc["metadata"]["name"] not in found, "one Boxfish container a workload"
                found[doc["metadata"]["name"]] = c
    return found


def configmap_env(docs: list[dict], name: str = "boxfish-config") -> dict[str, str]:
    return dict(named(docs, "ConfigMap", name)["data"])


# -- the CLI and the settings --------------------------------------------------------------------


@functools.cache
def cli_help(*words: str) -> str:
    """``boxfish <words> --help``, from the installed console script."""
    exe = shutil.which("boxfish", path=str(Path(sys.executable).parent))
    assert exe, "the boxfish console script is not installed beside this Python"
    proc = subprocess.run([exe, *words, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def help_flags(*words: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", cli_help(*words)))


def subcommands() -> set[str]:
    return set(re.search(r"\{([a-z,-]+)\}", cli_help()).group(1).split(","))


def parse_boxfish(command: list[str]):
    """The CLI's own parse of ``boxfish ...`` (an argparse Namespace); SystemExit if it does
    not parse."""
    return cli._parser().parse_args(command[1:])


def command_problems(command: list[str]) -> list[str]:
    """What is wrong with a ``boxfish`` command line: another program, a subcommand or flag
    that ``boxfish --help`` does not list (spelt out: argparse would take an abbreviation), or
    a value the CLI's parser refuses."""
    if command[:1] != ["boxfish"]:
        return [f"{command}: not the boxfish command"]
    if len(command) < 2 or command[1] not in subcommands():
        return [f"{command}: not a subcommand of boxfish ({sorted(subcommands())})"]
    flags = help_flags(command[1])
    problems = [f"{command}: {arg.split('=')[0]} is not in boxfish {command[1]} --help"
                for arg in command[2:]
                if arg.startswith("--") and arg.split("=")[0] not in flags]
    try:
        with open(os.devnull, "w") as devnull, mock.patch("sys.stderr", devnull):
            parse_boxfish(command)
    except SystemExit:
        problems.append(f"{command}: boxfish's parser refuses it")
    return problems


def setting_names() -> set[str]:
    return {"REDIS_URL"} | {f"BOXFISH_{name.upper()}" for name in Settings.model_fields}


def settings_from(env: dict[str, str]) -> Settings:
    """The settings a process with exactly ``env`` reads."""
    with mock.patch.dict(os.environ, env, clear=True):
        return Settings()


def env_problems(env: dict) -> list[str]:
    """What is wrong with the environment a deployment gives Boxfish: a name that is no
    setting (Settings ignores unknown names, so a misspelt one would silently do nothing), a
    value that is not a string (a YAML ``yes`` or ``1`` unquoted), or values the settings
    refuse."""
    problems = [f"{name} is not a setting" for name in env if name not in setting_names()]
    problems += [f"{name}: {value!r} is not a string (quote it)"
                 for name, value in env.items() if not isinstance(value, str)]
    if problems:
        return problems
    try:
        settings_from(env)
    except pydantic.ValidationError as exc:
        problems.append(f"the settings refuse these values: {exc}")
    return problems


# -- the Kubernetes checks -----------------------------------------------------------------------


def validation_problems(docs: list[dict], version: str = KUBERNETES_VERSION) -> list[str]:
    problems = []
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.path)
            problems.append(f"{doc['kind']} {doc['metadata']['name']}: {where}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            problems.append(exc.message)
    return problems


def container_port(container: dict, port) -> int | None:
    """A probe's or Service's port (a number, or a name of one of the container's ports) as a
    number; None when the name is not one of them."""
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


def has_port(container: dict, port) -> bool:
    """Whether the container declares ``port`` (a number or a name)."""
    key = "name" if isinstance(port, str) else "containerPort"
    return any(p.get(key) == port for p in container.get("ports", []))


def probe_problems(deployment: dict, routes: set[str]) -> list[str]:
    """The API container's probes: readiness on ``/readyz``, liveness (and start-up, if any)
    on ``/healthz``, routes the app has, on the port its ``boxfish serve`` listens on, which
    is a port of the container."""
    (api,) = deployment["spec"]["template"]["spec"]["containers"]
    port = parse_boxfish(argv(api)).port
    problems = []
    if port not in [p["containerPort"] for p in api.get("ports", [])]:
        problems.append(f"boxfish serve listens on {port}, not a port of the container")
    expected = {"readinessProbe": "/readyz", "livenessProbe": "/healthz",
                "startupProbe": "/healthz"}
    for kind, path in expected.items():
        probe = api.get(kind)
        if probe is None:
            if kind != "startupProbe":
                problems.append(f"no {kind}")
            continue
        get = probe.get("httpGet")
        if get is None:
            problems.append(f"{kind} is not an HTTP GET")
            continue
        if get["path"] != path:
            problems.append(f"{kind} asks {get['path']}, not {path}")
        if get["path"] not in routes:
            problems.append(f"{kind}: the app has no route {get['path']}")
        if container_port(api, get["port"]) != port:
            problems.append(f"{kind} asks port {get['port']}, boxfish serve listens on {port}")
    return problems


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def selector_problems(docs: list[dict]) -> list[str]:
    """Every workload's selector matches its own pods; every Service selects pods whose
    containers have its target ports; every PodDisruptionBudget selects some pods; every
    StatefulSet's serviceName is a headless Service that selects its pods."""
    workloads = [d for d in docs if pod_spec(d) is not None]
    problems = []
    for w in workloads:
        match = w["spec"].get("selector", {}).get("matchLabels")
        if w["kind"] != "Job" and not selects(match, pod_labels(w)):
            problems.append(f"{w['kind']} {w['metadata']['name']}: its selector {match} does "
                            f"not match its pods' labels {pod_labels(w)}")
    for svc in (d for d in docs if d["kind"] == "Service"):
        name, selector = svc["metadata"]["name"], svc["spec"].get("selector", {})
        targets = [w for w in workloads if selects(selector, pod_labels(w))]
        if not targets:
            problems.append(f"Service {name}: its selector {selector} matches no pods")
        for port in svc["spec"]["ports"]:
            target = port.get("targetPort", port["port"])
            for w in targets:
                if not any(has_port(c, target) for c in containers(w)):
                    problems.append(f"Service {name}: {w['metadata']['name']} has no container "
                                    f"port {target}")
    for pdb in (d for d in docs if d["kind"] == "PodDisruptionBudget"):
        match = pdb["spec"]["selector"].get("matchLabels")
        if not any(selects(match, pod_labels(w)) for w in workloads):
            problems.append(f"PodDisruptionBudget {pdb['metadata']['name']}: its selector "
                            f"{match} matches no pods")
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for sts in (d for d in docs if d["kind"] == "StatefulSet"):
        svc = services.get(sts["spec"]["serviceName"])
        if svc is None:
            problems.append(f"StatefulSet {sts['metadata']['name']}: no Service "
                            f"{sts['spec']['serviceName']}")
        elif not selects(svc["spec"].get("selector", {}), pod_labels(sts)):
            problems.append(f"StatefulSet {sts['metadata']['name']}: its Service does not "
                            "select its pods")
    return problems


def reference_problems(docs: list[dict]) -> list[str]:
    """Every ConfigMap and Secret a pod takes (envFrom, env, volumes) exists, with the keys
    asked for."""
    have = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    problems = []

    def need(kind: str, name: str, key: str | None, where: str) -> None:
        doc = have.get((kind, name))
        if doc is None:
            problems.append(f"{where}: no {kind} {name}")
        elif key is not None and key not in {**doc.get("data", {}),
                                             **doc.get("stringData", {})}:
            problems.append(f"{where}: {kind} {name} has no key {key}")

    for w in (d for d in docs if pod_spec(d) is not None):
        where = f"{w['kind']} {w['metadata']['name']}"
        for c in containers(w):
            for source in c.get("envFrom", []):
                if "configMapRef" in source:
                    need("ConfigMap", source["configMapRef"]["name"], None, where)
                if "secretRef" in source:
                    need("Secret", source["secretRef"]["name"], None, where)
            for var in c.get("env", []):
                ref = var.get("valueFrom", {})
                if "configMapKeyRef" in ref:
                    need("ConfigMap", ref["configMapKeyRef"]["name"],
                         ref["configMapKeyRef"]["key"], where)
                if "secretKeyRef" in ref:
                    need("Secret", ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"],
                         where)
        for volume in pod_spec(w).get("volumes", []):
            if "configMap" in volume:
                need("ConfigMap", volume["configMap"]["name"], None, where)
            if "secret" in volume:
                need("Secret", volume["secret"]["secretName"], None, where)
    return problems


def resource_problems(docs: list[dict]) -> list[str]:
    """Every container requests CPU and memory and has a memory limit."""
    problems = []
    for w in (d for d in docs if pod_spec(d) is not None):
        for c in containers(w):
            res = c.get("resources", {})
            missing = [f"requests.{r}" for r in ("cpu", "memory")
                       if r not in res.get("requests", {})]
            missing += [] if "memory" in res.get("limits", {}) else ["limits.memory"]
            if missing:
                problems.append(f"{w['metadata']['name']}/{c['name']}: no {', '.join(missing)}")
    return problems


def cpus(quantity) -> float:
    """A CPU quantity as Kubernetes (``"2"``, ``"500m"``, ``1.5``) or Compose (``"0.5"``)
    writes it, in CPUs."""
    text = str(quantity).strip()
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def search_load(command: list[str], env: dict[str, str]) -> tuple[int, int | None]:
    """The analysis processes a Boxfish ``command`` runs, and the search threads each of them
    is given (None: not set, so each takes a share of the cores it sees): ``boxfish worker
    --workers N`` runs N (none with ``--webhooks``: deliveries search nothing), ``boxfish
    serve --workers N`` N; the threads are ``--search-threads``, else
    ``BOXFISH_SEARCH_THREADS`` of ``env``."""
    args = parse_boxfish(command)
    if args.command == "worker":
        processes = 0 if args.webhooks else args.workers
    elif args.command == "serve":
        processes = args.workers
    else:  # project, rebuild, ...: no search
        processes = 0
    threads = getattr(args, "search_threads", None)
    if threads is None and env.get("BOXFISH_SEARCH_THREADS", "").strip():
        threads = int(env["BOXFISH_SEARCH_THREADS"])
    return processes, threads


def cpu_problems(name: str, limit, command: list[str] | None, env: dict[str, str]) -> list[str]:
    """What is wrong with the CPUs of a container named ``name`` (``command``: a Boxfish
    command, None for another program): no CPU limit, or, for one that searches, search
    threads not set or more of them (threads times analysis processes) than its limit. A
    search given no thread count takes the cores it may use, rounded up from its quota, for
    each process that shares them: a limit of 1.5 CPUs is 2 cores."""
    if limit is None:
        return [f"{name}: no CPU limit"]
    if command is None:
        return []
    processes, threads = search_load(command, env)
    if not processes:
        return []
    if threads is None:
        return [f"{name}: {processes} analysis process(es) with no BOXFISH_SEARCH_THREADS"]
    if processes * threads > cpus(limit):
        return [f"{name}: {processes} process(es) x {threads} search thread(s) = "
                f"{processes * threads} > its CPU limit of {cpus(limit):g}"]
    return []


def kubernetes_cpu_problems(docs: list[dict]) -> list[str]:
    """:func:`cpu_problems` of every container of every workload, a Boxfish one with its
    environment: the ConfigMap's, then its own ``env``."""
    shared = configmap_env(docs)
    problems = []
    for w in (d for d in docs if pod_spec(d) is not None):
        for c in containers(w):
            limit = c.get("resources", {}).get("limits", {}).get("cpu")
            env = {**shared, **{v["name"]: v.get("value") for v in c.get("env", [])}}
            problems += cpu_problems(f"{w['metadata']['name']}/{c['name']}", limit,
                                     argv(c) if is_boxfish(c["image"]) else None, env)
    return problems


def compose_cpu_problems(spec: dict) -> list[str]:
    """:func:`cpu_problems` of every Compose service (its CPU limit: ``cpus``, or
    ``deploy.resources.limits.cpus``)."""
    problems = []
    for name, service in spec["services"].items():
        limit = service.get("cpus", service.get("deploy", {}).get("resources", {}).get(
            "limits", {}).get("cpus"))
        boxfish = service.get("image") == IMAGE
        problems += cpu_problems(name, limit, service["command"] if boxfish else None,
                                 service.get("environment", {}))
    return problems


def redis_server_port(command: list[str]) -> int:
    return int(command[command.index("--port") + 1]) if "--port" in command else 6379


def is_cluster_node(command: list[str]) -> bool:
    return "--cluster-enabled" in command and \
        command[command.index("--cluster-enabled") + 1] == "yes"


def redis_address_problems(env: dict[str, str], servers: dict[str, tuple[list[int], list]]
                           ) -> list[str]:
    """The Redis URLs of ``env`` against ``servers`` (host name -> its ports and the
    ``redis-server`` command lines behind it): each names a host there, on a port where a
    ``redis-server`` listens; ``REDIS_URL`` a cluster node when ``BOXFISH_REDIS_CLUSTER`` is
    yes, the queue Redis never one (RQ cannot run on a cluster), and appending to its AOF."""
    problems = []
    for name in REDIS_URL_SETTINGS:
        if name not in env:
            continue
        url = urlsplit(env[name])
        if url.scheme != "redis" or url.hostname not in servers:
            problems.append(f"{name}={env[name]}: no Redis named {url.hostname}")
            continue
        ports, commands = servers[url.hostname]
        port = url.port or 6379
        listening = [c for c in commands if c[:1] == ["redis-server"]
                     and redis_server_port(c) == port]
        if port not in ports or not listening:
            problems.append(f"{name}={env[name]}: no redis-server on port {port} behind it")
            continue
        cluster = all(is_cluster_node(c) for c in listening)
        if name == "BOXFISH_QUEUE_REDIS_URL" and cluster:
            problems.append(f"{name}: a cluster node (RQ needs a plain Redis)")
        if name == "REDIS_URL" and (env.get("BOXFISH_REDIS_CLUSTER") == "yes") != cluster:
            problems.append(f"REDIS_URL: BOXFISH_REDIS_CLUSTER={env.get('BOXFISH_REDIS_CLUSTER')}"
                            f" but the servers are {'' if cluster else 'not '}cluster nodes")
        if not all("--appendonly" in c and c[c.index("--appendonly") + 1] == "yes"
                   for c in listening):
            problems.append(f"{name}: the Redis behind it keeps no AOF (--appendonly yes)")
    return problems


def kubernetes_redis_servers(docs: list[dict]) -> dict[str, tuple[list[int], list]]:
    """Service name -> (its ports, the container commands of the pods it selects), resolving
    each Service port to the container port it targets."""
    workloads = [d for d in docs if pod_spec(d) is not None]
    servers = {}
    for svc in (d for d in docs if d["kind"] == "Service"):
        selected = [w for w in workloads if selects(svc["spec"].get("selector", {}),
                                                    pod_labels(w))]
        ports = [p["port"] for p in svc["spec"]["ports"]
                 if any(container_port(c, p.get("targetPort", p["port"])) == p["port"]
                        for w in selected for c in containers(w))]
        servers[svc["metadata"]["name"]] = (ports, [argv(c) for w in selected
                                                    for c in containers(w)])
    return servers


def shell_problems(script: str, where: str) -> list[str]:
    proc = subprocess.run(["sh", "-n"], input=script, capture_output=True, text=True,
                          timeout=30)
    return [] if proc.returncode == 0 else [f"{where}: sh -n: {proc.stderr.strip()}"]


def routes_of_the_app(settings) -> set[str]:
    from boxfish.service.http.app import create_app

    app = create_app(settings)
    return {rule.rule for rule in app.url_map.iter_rules() if "GET" in rule.methods}


# -- Kubernetes ----------------------------------------------------------------------------------


def test_the_kustomization_lists_every_manifest_and_names_the_image():
    k = kustomization()
    files = {p.name for p in KUBE.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(k["resources"]) == files
    assert [i["name"] for i in k["images"]] == [IMAGE]
    version = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(),
                        flags=re.M).group(1)
    assert k["images"][0]["newTag"] == version, "the image tag is the project's version"


def test_every_manifest_is_valid_for_a_current_kubernetes():
    docs = manifests()
    assert len(docs) >= 10
    assert validation_problems(docs) == []


def test_the_validation_is_strict():
    (deployment, *_) = [d for d in manifests() if d["kind"] == "Deployment"]
    broken = copy.deepcopy(deployment)
    broken["spec"]["replica"] = 2
    assert "'replica' was unexpected" in " ".join(validation_problems([broken]))
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8000"
    assert validation_problems([broken])


def test_every_boxfish_container_runs_a_real_command_with_real_settings():
    docs = manifests()
    found = boxfish_containers(docs)
    assert set(found) == set(COMPOSE_TO_KUBERNETES.values())
    for name, c in found.items():
        assert command_problems(argv(c)) == [], name
        assert [s["configMapRef"]["name"] for s in c["envFrom"]] == ["boxfish-config"], name
        assert env_problems({v["name"]: v.get("value") for v in c.get("env", [])}) == [], name
    assert env_problems(configmap_env(docs)) == []


def test_the_workers_serve_the_right_queues():
    found = boxfish_containers(manifests())
    api = parse_boxfish(argv(found["boxfish-api"]))
    assert api.command == "serve" and api.workers == 0 and api.webhook_workers == 0, \
        "the API pods run no workers: the worker Deployments do"
    worker = parse_boxfish(argv(found["boxfish-worker"]))
    assert worker.command == "worker" and not worker.webhooks and not worker.burst
    webhooks = parse_boxfish(argv(found["boxfish-webhook-worker"]))
    assert webhooks.command == "worker" and webhooks.webhooks and not webhooks.burst


def test_the_command_checker_catches_wrong_commands():
    assert command_problems(["boxfish", "serve", "--host", "0.0.0.0", "--port", "8000"]) == []
    assert command_problems(["boxfish", "worker", "--webhooks"]) == []
    assert "--wokers is not in" in " ".join(command_problems(["boxfish", "worker",
                                                               "--wokers", "2"]))
    # argparse would take the abbreviation; a deployment file spells the flag out.
    assert command_problems(["boxfish", "worker", "--webhook"])
    assert "refuses" in " ".join(command_problems(["boxfish", "serve", "--port", "eighty"]))
    assert command_problems(["boxfish", "run"])
    assert command_problems(["gunicorn", "boxfish.service.http.wsgi:app"])


def test_the_env_checker_catches_wrong_settings():
    assert env_problems({"REDIS_URL": "redis://x:6379", "BOXFISH_MAX_TIME_MS": "500"}) == []
    assert env_problems({"BOXFISH_MAX_TIME": "500"}) == ["BOXFISH_MAX_TIME is not a setting"]
    assert "refuse" in " ".join(env_problems({"BOXFISH_REDIS_CLUSTER": "maybe"}))
    assert "refuse" in " ".join(env_problems({"BOXFISH_MAX_TIME_MS": "ten seconds"}))
    assert "not a string" in " ".join(env_problems({"BOXFISH_RATE_LIMIT_ENABLED": True}))


def test_the_api_probes_ask_the_apps_routes_on_its_port(settings):
    routes = routes_of_the_app(settings)
    assert {"/healthz", "/readyz"} <= routes
    api = named(manifests(), "Deployment", "boxfish-api")
    assert probe_problems(api, routes) == []
    (container,) = api["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # The checker catches a wrong path, a path the app lacks and a wrong port.
    broken = copy.deepcopy(api)
    probe = broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]
    probe["path"] = "/ready"
    assert len(probe_problems(broken, routes)) == 2
    probe["path"], probe["port"] = "/readyz", 8080
    assert probe_problems(broken, routes) == [
        "readinessProbe asks port 8080, boxfish serve listens on 8000"]
    del broken["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
    assert "no livenessProbe" in probe_problems(broken, routes)


def test_selectors_references_and_resources():
    docs = manifests()
    assert selector_problems(docs) == []
    assert reference_problems(docs) == []
    assert resource_problems(docs) == []
    # The API has a PodDisruptionBudget that selects its pods.
    api = named(docs, "Deployment", "boxfish-api")
    pdb = named(docs, "PodDisruptionBudget", "boxfish-api")
    assert selects(pdb["spec"]["selector"]["matchLabels"], pod_labels(api))
    assert api["spec"]["replicas"] > pdb["spec"]["minAvailable"]


def test_the_cross_checkers_catch_broken_manifests():
    docs = manifests()
    broken = copy.deepcopy(docs)
    named(broken, "PodDisruptionBudget", "boxfish-api")["spec"]["selector"]["matchLabels"][
        "app.kubernetes.io/component"] = "apii"
    named(broken, "Service", "redis-queue")["spec"]["ports"][0]["targetPort"] = "resp"
    assert len(selector_problems(broken)) == 2
    broken = copy.deepcopy(docs)
    container = named(broken, "Deployment", "boxfish-worker")["spec"]["template"]["spec"][
        "containers"][0]
    container["envFrom"].append({"secretRef": {"name": "boxfish-secrets"}})
    del container["resources"]["requests"]["cpu"]
    assert reference_problems(broken) == ["Deployment boxfish-worker: no Secret boxfish-secrets"]
    assert resource_problems(broken) == ["boxfish-worker/worker: no requests.cpu"]


def test_every_container_has_a_cpu_limit_and_the_searches_fit_it():
    """The issue's over-commit: worker pods of 2 processes whose searches each took every
    core of the node. Every container has a CPU limit, and a worker's processes times their
    search threads fit within it."""
    docs = manifests()
    assert kubernetes_cpu_problems(docs) == []
    worker = boxfish_containers(docs)["boxfish-worker"]
    env = {**configmap_env(docs), **{v["name"]: v["value"] for v in worker["env"]}}
    processes, threads = search_load(argv(worker), env)
    assert processes >= 2 and processes * threads == cpus(worker["resources"]["limits"]["cpu"])


def test_the_cpu_checker_catches_a_missing_limit_and_an_overcommit():
    docs = manifests()
    broken = copy.deepcopy(docs)
    worker = boxfish_containers(broken)["boxfish-worker"]
    worker["env"] = [{"name": "BOXFISH_SEARCH_THREADS", "value": "2"}]
    del named(broken, "StatefulSet", "redis-queue")["spec"]["template"]["spec"]["containers"][
        0]["resources"]["limits"]["cpu"]
    assert kubernetes_cpu_problems(broken) == [
        "redis-queue/redis: no CPU limit",
        "boxfish-worker/worker: 2 process(es) x 2 search thread(s) = 4 > its CPU limit of 2"]
    worker["env"] = []
    worker["args"] = ["boxfish", "worker", "--workers", "2", "--search-threads", "1"]
    worker["resources"]["limits"]["cpu"] = "1500m"
    assert kubernetes_cpu_problems(broken) == [
        "redis-queue/redis: no CPU limit",
        "boxfish-worker/worker: 2 process(es) x 1 search thread(s) = 2 > its CPU limit of 1.5"]
    assert cpu_problems("w", "2", ["boxfish", "worker", "--workers", "2"], {}) == [
        "w: 2 analysis process(es) with no BOXFISH_SEARCH_THREADS"]
    # Deliveries, the projector and an API without workers search nothing.
    assert cpu_problems("w", "0.5", ["boxfish", "worker", "--webhooks"], {}) == []
    assert cpu_problems("p", "0.5", ["boxfish", "project", "explorer"], {}) == []
    assert cpu_problems("a", "1", ["boxfish", "serve", "--workers", "0"], {}) == []
    assert cpu_problems("a", "1", ["boxfish", "serve", "--workers", "2"],
                        {"BOXFISH_SEARCH_THREADS": "1"}) == [
        "a: 2 process(es) x 1 search thread(s) = 2 > its CPU limit of 1"]


def test_the_containers_run_as_the_images_user_without_privileges():
    for doc in manifests():
        spec = pod_spec(doc)
        if spec is None:
            continue
        assert spec["securityContext"]["runAsNonRoot"] is True, doc["metadata"]["name"]
        for c in containers(doc):
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
            if is_boxfish(c["image"]):
                assert spec["securityContext"]["runAsUser"] == IMAGE_UID


def test_the_settings_name_the_redis_services():
    docs = manifests()
    env = configmap_env(docs)
    assert set(REDIS_URL_SETTINGS) <= set(env)
    servers = kubernetes_redis_servers(docs)
    assert redis_address_problems(env, servers) == []
    # The checker: a wrong host, a wrong port, the queue on the cluster.
    assert redis_address_problems({"REDIS_URL": "redis://redis:6379"}, servers)
    assert redis_address_problems({**env, "REDIS_URL": "redis://redis-cluster:7000"}, servers)
    assert "RQ needs a plain Redis" in " ".join(redis_address_problems(
        {**env, "BOXFISH_QUEUE_REDIS_URL": "redis://redis-cluster:6379"}, servers))


def test_the_redis_cluster_is_six_nodes_formed_once():
    docs = manifests()
    nodes = named(docs, "StatefulSet", "redis-cluster")
    assert nodes["spec"]["replicas"] == 6
    assert named(docs, "Service", "redis-cluster")["spec"]["clusterIP"] == "None"
    (init,) = containers(named(docs, "Job", "redis-cluster-init"))
    assert argv(init)[:2] == ["sh", "-c"]
    script = argv(init)[2]
    assert shell_problems(script, "redis-cluster-init") == []
    # Kubernetes turns $$ into $ in a command: the script must have none.
    assert "$$" not in script
    loop = re.search(r"for i in ([\d ]+); do hosts=\"\$hosts redis-cluster-\$i\.redis-cluster\"",
                     script)
    assert loop and loop.group(1).split() == [str(i) for i in range(6)]
    assert "--cluster create" in script and "--cluster-replicas 1" in script


def test_the_workers_have_time_to_finish_their_job():
    """A worker Deployment's grace period outlasts the time ``boxfish serve`` and ``boxfish
    worker`` give such a worker process to stop (the job limit plus 10 s; a webhook attempt
    four times over plus 10 s), with the ConfigMap's settings."""
    docs = manifests()
    settings = settings_from(configmap_env(docs))
    grace = {name: named(docs, "Deployment", name)["spec"]["template"]["spec"].get(
        "terminationGracePeriodSeconds", 30) for name in ("boxfish-worker",
                                                          "boxfish-webhook-worker")}
    assert grace["boxfish-worker"] > settings.max_time_ms / 1000 + 10
    assert grace["boxfish-webhook-worker"] > settings.webhook_timeout_s * 4 + 10


# -- Compose -------------------------------------------------------------------------------------


def compose_redis_servers(services: dict) -> dict[str, tuple[list[int], list]]:
    """Compose service name -> (the port its redis-server listens on, its command)."""
    return {name: ([redis_server_port(s["command"])], [s["command"]])
            for name, s in services.items()
            if isinstance(s.get("command"), list) and s["command"][:1] == ["redis-server"]}


def test_the_compose_services_run_the_kubernetes_commands():
    services = compose()["services"]
    found = boxfish_containers(manifests())
    boxfish = {name for name, s in services.items() if s.get("image") == IMAGE}
    assert boxfish == set(COMPOSE_TO_KUBERNETES)
    for name in boxfish:
        assert command_problems(services[name]["command"]) == [], name
        assert services[name]["command"] == argv(found[COMPOSE_TO_KUBERNETES[name]]), name
        assert env_problems(services[name]["environment"]) == [], name
        assert redis_address_problems(services[name]["environment"],
                                      compose_redis_servers(services)) == [], name
        # Built from the repository's Dockerfile (the path is the compose file's folder's).
        assert (COMPOSE.parent / services[name]["build"]).resolve() == ROOT
        assert (ROOT / "Dockerfile").is_file()


def test_every_compose_service_has_a_cpu_limit_and_the_searches_fit_it():
    """The Compose file of the issue ran 2 worker replicas of 2 processes, with no CPU limit
    and no BOXFISH_SEARCH_THREADS: each process searched with every core of the host."""
    spec = compose()
    assert compose_cpu_problems(spec) == []
    worker = spec["services"]["worker"]
    processes, threads = search_load(worker["command"], worker["environment"])
    assert processes * threads == cpus(worker["deploy"]["resources"]["limits"]["cpus"])
    # The Compose worker searches as the Kubernetes one does.
    docs = manifests()
    pod = boxfish_containers(docs)["boxfish-worker"]
    assert (processes, threads) == search_load(argv(pod), {
        **configmap_env(docs), **{v["name"]: v["value"] for v in pod["env"]}})
    broken = copy.deepcopy(spec)
    del broken["services"]["worker"]["environment"]["BOXFISH_SEARCH_THREADS"]
    del broken["services"]["api"]["deploy"]
    assert compose_cpu_problems(broken) == [
        "api: no CPU limit", "worker: 2 analysis process(es) with no BOXFISH_SEARCH_THREADS"]


def test_the_compose_file_is_whole():
    spec = compose()
    services = spec["services"]
    for name, s in services.items():
        depends = s.get("depends_on", [])
        assert set(depends) <= set(services), name
        for volume in s.get("volumes", []):
            assert volume.split(":")[0] in spec["volumes"], (name, volume)
    api = parse_boxfish(services["api"]["command"])
    assert services["api"]["ports"] == [f"{api.port}:{api.port}"]
    # The cluster: six nodes, formed by a script sh can read (Compose turns $$ into $).
    nodes = [n for n, s in services.items() if is_cluster_node(s.get("command") or [])]
    assert len(nodes) == 6
    (script,) = services["cluster-init"]["command"]
    assert shell_problems(script.replace("$$", "$"), "cluster-init") == []
    assert "--cluster create" in script and "--cluster-replicas 1" in script


def test_the_docs_show_the_deployment_files_as_they_are():
    """The Compose page includes deploy/compose.yaml itself (a snippet the site's build reads:
    tests/test_docs_site.py) or a copy of it as it is; the Kubernetes page applies the
    kustomization and names the schemas checked here."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", (DOCS / "compose.md").read_text(),
                        flags=re.M | re.S)
    assert '--8<-- "deploy/compose.yaml"\n' in blocks or COMPOSE.read_text() in blocks
    text = (DOCS / "kubernetes.md").read_text()
    assert "kubectl apply -k deploy/kubernetes" in text
    assert f"Kubernetes {KUBERNETES_VERSION}'s schemas" in text


def test_the_kustomization_renders_valid_manifests():
    """What ``kubectl apply -k`` applies (the namespace and the image set on every
    resource) is valid too; fails where kubectl is not installed (never skipped)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not installed: it renders the kustomization", pytrace=False)
    proc = subprocess.run([kubectl, "kustomize", str(KUBE)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
    assert len(docs) == len(manifests())
    assert validation_problems(docs) == []
    k = kustomization()
    image = f"{k['images'][0]['newName']}:{k['images'][0]['newTag']}"
    assert set(boxfish_containers(docs)) == set(COMPOSE_TO_KUBERNETES.values())
    for doc in docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == k["namespace"], doc["metadata"]["name"]
        for c in containers(doc):
            assert c["image"] in (image, "redis:7.2"), c["image"]


# -- end to end ----------------------------------------------------------------------------------


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _local(command: list[str], host: str, port: int) -> list[str]:
    """``boxfish serve``'s command listening on ``host:port`` instead."""
    out = list(command)
    out[out.index("--host") + 1] = host
    out[out.index("--port") + 1] = str(port)
    return out


def test_the_kubernetes_containers_commands_serve_together_as_host_processes(redis_cluster,
                                                                            tmp_path):
    """The three Boxfish containers' commands, run as processes of this host (no pods, no
    image: Kubernetes cannot run here) with the ConfigMap's settings (the Redis Services'
    addresses replaced by a local Redis Cluster's node and a local queue Redis): the API gets
    ready (its readiness probe sees both kinds of worker), appends a move that the 201 finds
    on the replica of the game's master (BOXFISH_MIN_REPLICAS_ACK), and serves an analysis
    that a worker computed."""
    redis_cluster.ensure_healthy()
    docs = manifests()
    found = boxfish_containers(docs)
    queue = EmbeddedRedis(str(tmp_path / "queue"), appendfsync="everysec").start()
    env = {k: v for k, v in os.environ.items()
           if k != "REDIS_URL" and not k.startswith("BOXFISH_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    local = {"redis-cluster": urlsplit(redis_cluster.url).netloc,
             "redis-queue": urlsplit(queue.url).netloc}
    for name, value in configmap_env(docs).items():
        if name in REDIS_URL_SETTINGS:
            url = urlsplit(value)
            value = url._replace(netloc=local[url.hostname]).geturl()
        env[name] = value
    port = free_port()
    api_cmd = _local(argv(found["boxfish-api"]), "127.0.0.1", port)
    procs = []
    try:
        for name, command in (("api", api_cmd),
                              ("worker", argv(found["boxfish-worker"])),
                              ("webhook-worker", argv(found["boxfish-webhook-worker"]))):
            log = open(tmp_path / f"{name}.log", "wb")
            procs.append(subprocess.Popen(command, env=env, stdout=log, stderr=log,
                                          start_new_session=True))
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                status, body = _get(f"{base}/readyz")
                ready = json.loads(body) if status == 200 else {}
                if ready.get("workers") == 2 and ready.get("webhook_workers") == 1:
                    break
            except OSError:
                pass
            dead = [p.args for p in procs if p.poll() is not None]
            assert not dead and time.monotonic() < deadline, (
                f"not ready; exited: {dead}; api log: "
                + (tmp_path / "api.log").read_text(errors="replace")[-2000:])
            time.sleep(0.3)
        assert _get(f"{base}/healthz")[0] == 200
        status, body = _post(f"{base}/v1/games", json.dumps(
            {"game": "dots-and-boxes", "width": 2, "height": 2}).encode())
        assert status == 201, body
        game = json.loads(body)
        status, body = _post(f"{base}/v1/games/{game['id']}/moves",
                             json.dumps({"move": [1, 1, 1]}).encode(),
                             {"Authorization": f"Bearer {game['write_token']}"})
        assert status == 201, body
        settings = settings_from({k: v for k, v in env.items()
                                  if k in setting_names()})
        assert settings.min_replicas_ack >= 1
        log = KeySpace(settings.key_prefix).game_log(game["id"])
        (replica,) = redis_cluster.replicas_of(redis_cluster.node_for_key(log))
        with contextlib.closing(replica.client(single_connection_client=True)) as on_replica:
            on_replica.execute_command("READONLY")
            assert on_replica.xlen(log) == 1
        status, body = _post(f"{base}/v1/analyses?wait=10", json.dumps(
            {"game": "dots-and-boxes", "width": 1, "height": 1, "moves": [[1, 1, 1], [1, 2, 1]],
             "time_ms": 500}).encode())
        assert status in (200, 202), body
        job = json.loads(body)
        deadline = time.monotonic() + 120
        while job["status"] != "finished":  # a 202 after the wait: the worker is slow here
            assert job["status"] in ("queued", "started") and time.monotonic() < deadline, job
            time.sleep(0.2)
            status, body = _get(f"{base}/v1/analyses/{job['id']}")
            assert status == 200, body
            job = json.loads(body)
        assert job["result"]["exact"] is True, job
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        queue.stop()
    assert [p.returncode for p in procs] == [0, 0, 0], [
        (tmp_path / f"{n}.log").read_text(errors="replace")[-1500:]
        for n in ("api", "worker", "webhook-worker")]
