"""docker-compose.yml, deploy/ and grafana/provisioning checked as far as this machine allows.

Without a Docker engine nothing can start here, so the files are parsed and cross-checked: the
services and their pinned images, the workers' environment against `Settings`, Prometheus'
targets against the worker service, Grafana's mounts against the provisioning files, and that
the stack is closed by default (ports on 127.0.0.1 only, no unauthenticated Kafka listener
published, OpenSearch's security plugin on, every password a compose secret). Where the
`docker compose` plugin exists, `docker compose config` validates the file against the spec.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from streams.settings import Settings, sections

ROOT = Path(__file__).parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
WORKER = SERVICES["worker"]
SETTINGS = {name.upper() for model in sections().values() for name in model.model_fields}
# A fixed tag: not latest, not a bare name; a digest pin is fine too.
PINNED = re.compile(r"^[\w./-]+(:(?!latest$)[\w][\w.-]*|@sha256:[0-9a-f]{64})$")
INTERPOLATION = re.compile(r"\$\{(\w+)(?::?[-?+][^}]*)?\}")


def mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Bind mounts of a service: container path -> host path (relative to the compose file)."""
    out = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            out[target] = ROOT / source
    return out


def env(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment", {})
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    return {k: str(v) for k, v in environment.items()}


def test_the_stack_has_its_services_with_pinned_images():
    assert {"kafka", "opensearch", "prometheus", "grafana", "worker"} <= set(SERVICES)
    for name, service in SERVICES.items():
        assert PINNED.match(service["image"]), f"{name}: image {service['image']!r} is not pinned"
    assert SERVICES["kafka"]["image"].startswith("apache/kafka:")
    assert WORKER["build"] == "."


def test_kafka_runs_in_kraft_mode_and_the_workers_reach_it():
    kafka = env(SERVICES["kafka"])
    assert set(kafka["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert not any("ZOOKEEPER" in key for key in kafka), "KRaft: no ZooKeeper"
    assert "zookeeper" not in SERVICES
    node = kafka["KAFKA_NODE_ID"]
    assert kafka["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{node}@kafka:")
    listener_names = {entry.split(":")[0] for entry in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")}
    listeners = {entry.split("://")[0] for entry in kafka["KAFKA_LISTENERS"].split(",")}
    assert listeners <= listener_names and kafka["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    advertised = dict(entry.split("://") for entry in kafka["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert env(WORKER)["KAFKA_BROKER_URL"] == advertised[kafka["KAFKA_INTER_BROKER_LISTENER_NAME"]]
    assert WORKER["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert "healthcheck" in SERVICES["kafka"]


def test_worker_environment_names_real_settings():
    unknown = set(env(WORKER)) - SETTINGS
    assert not unknown, f"not settings of streams/settings/: {sorted(unknown)}"
    worker = env(WORKER)
    assert worker["KAFKA_ONE_RECORD_BATCHES"] == "false", "Apache Kafka takes multi-record batches"
    # Values that are not interpolated parse as the settings they are meant for.
    literal = {k: v for k, v in worker.items() if "$" not in v}
    Settings(**{k.lower(): v for k, v in literal.items()})


def test_every_worker_advertises_its_own_address():
    """Faust forwards a user's request to the owner's canonical URL, http://WEB_HOST:WEB_PORT:
    one fixed WEB_HOST (0.0.0.0, or a name all replicas share) would send it to the wrong
    worker or nowhere."""
    assert "WEB_HOST" not in env(WORKER)
    command = " ".join(WORKER["command"])
    assert re.search(r"export WEB_HOST=\$\$\(hostname -i", command), command
    assert command.rstrip().endswith("exec memstream worker")
    assert WORKER["deploy"]["replicas"] >= 2
    assert "container_name" not in WORKER and "hostname" not in WORKER, "replicas need their own"


def test_prometheus_scrapes_every_worker_with_a_metrics_only_key():
    prometheus = SERVICES["prometheus"]
    config_path = mounts(prometheus)["/etc/prometheus/prometheus.yml"]
    config = yaml.safe_load(config_path.read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "memstream"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    (sd,) = job["dns_sd_configs"]
    assert sd["names"] == ["worker"] and sd["type"] == "A"
    assert str(sd["port"]) == env(WORKER)["WEB_PORT"]
    # The bearer key file is the compose secret mounted into the Prometheus container.
    credentials = job["authorization"]["credentials_file"]
    (secret,) = prometheus["secrets"]
    assert credentials == f"/run/secrets/{secret}"
    assert secret in COMPOSE["secrets"]
    # The key env.example makes for it is a `metrics` key: it reads /metrics and nothing else.
    example = (ROOT / "deploy" / "env.example").read_text()
    assert '"role":"metrics"' in example and '"role":"admin"' not in example


def test_prometheus_loads_the_shipped_alert_rules():
    prometheus = SERVICES["prometheus"]
    config_path = mounts(prometheus)["/etc/prometheus/prometheus.yml"]
    config = yaml.safe_load(config_path.read_text())
    for rule_file in config["rule_files"]:  # relative to the config's own directory
        mounted = mounts(prometheus).get(f"/etc/prometheus/{rule_file}")
        assert mounted is not None and mounted.exists(), f"{rule_file} is not mounted"


def test_grafana_provisioning_is_mounted_and_consistent():
    grafana = mounts(SERVICES["grafana"])
    provisioning = grafana["/etc/grafana/provisioning"]
    (datasource,) = yaml.safe_load((provisioning / "datasources" / "prometheus.yml").read_text())["datasources"]
    prometheus_port = SERVICES["prometheus"]["ports"][0].split(":")[-1]
    assert datasource["url"] == f"http://prometheus:{prometheus_port}"
    (provider,) = yaml.safe_load((provisioning / "dashboards" / "memstream.yml").read_text())["providers"]
    dashboards_dir = grafana[provider["options"]["path"]]
    dashboards = sorted(dashboards_dir.glob("*.json"))
    assert len(dashboards) == 5
    home = env(SERVICES["grafana"])["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert Path(home).parent == Path(provider["options"]["path"]) and (dashboards_dir / Path(home).name).exists()
    for path in dashboards:
        dashboard = json.loads(path.read_text())
        uids = {p["datasource"]["uid"] for p in dashboard["panels"]}
        assert uids == {datasource["uid"]}, f"{path.name} names datasources {uids}"


def test_every_build_input_and_bind_mount_exists():
    for name, service in SERVICES.items():
        for target, source in mounts(service).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) does not exist"
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"


def test_every_variable_the_stack_reads_is_documented():
    """docs/operations.md's table of the stack's variables has one row for each variable the
    compose file reads (from the environment or .env), and no other; deploy/env.example shows
    each."""
    operations = (ROOT / "docs" / "operations.md").read_text()
    after = operations.split('<a id="compose-variables"></a>', 1)[1].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    table = after[start:start + next(i for i, line in enumerate(after[start:] + [""])
                                     if not line.startswith("|"))]
    rows = [m.group(1) for line in table if (m := re.match(r"\| `(\w+)` \|", line))]
    example = (ROOT / "deploy" / "env.example").read_text()
    variables = set(INTERPOLATION.findall((ROOT / "docker-compose.yml").read_text()))
    variables |= {s["environment"] for s in COMPOSE.get("secrets", {}).values() if "environment" in s}
    assert variables
    assert len(rows) == len(set(rows)), f"listed twice in docs/operations.md: {rows}"
    assert set(rows) == variables, (
        f"docs/operations.md's compose variables: missing {sorted(variables - set(rows))}, "
        f"not read by the stack {sorted(set(rows) - variables)}")
    missing = [v for v in sorted(variables) if v not in example]
    assert not missing, f"not in deploy/env.example: {missing}"


def _compose_plugin() -> str | None:
    """Why `docker compose config` cannot run here, or None when it can."""
    docker = shutil.which("docker")
    if docker is None:
        return "the docker CLI is not installed"
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"the docker compose plugin is not installed ({(probe.stderr or probe.stdout).strip()[:120]})"
    return None


def test_docker_compose_config_accepts_the_file(tmp_path):
    reason = _compose_plugin()
    if reason:
        pytest.skip(reason)
    env_file = tmp_path / "test.env"
    env_file.write_text("MEMSTREAM_API_KEYS=[]\nMEMSTREAM_METRICS_KEY=k\nGRAFANA_ADMIN_PASSWORD=p\n"
                        "MEMSTREAM_MASTER_KEY=m\nOPENSEARCH_PASSWORD=o\nKAFKA_CHAT_PASSWORD=c\n")
    result = subprocess.run(
        ["docker", "compose", "--env-file", str(env_file), "-f", str(ROOT / "docker-compose.yml"),
         "config", "--quiet"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr


# --- closed by default ------------------------------------------------------------------------
LOCALHOST = "127.0.0.1"
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|(^|_)KEY$", re.I)
"""Environment variables that hold a credential (MEMSTREAM_API_KEYS holds hashes only)."""


def published(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host address, container port) of every port a service publishes; '' when the port is
    published on every interface."""
    out = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            out.append((str(port.get("host_ip", "")), str(port["target"])))
            continue
        parts = str(port).split("/")[0].rsplit(":", 2)
        host_ip = parts[0] if len(parts) == 3 else ""
        out.append((host_ip, parts[-1]))
    return out


def secret_file(name: str) -> str:
    assert name in COMPOSE["secrets"], f"no compose secret {name}"
    return f"/run/secrets/{name}"


def test_every_published_port_is_bound_to_localhost():
    exposed = {name: [p for p in published(s) if p[0] != LOCALHOST] for name, s in SERVICES.items()}
    assert not any(exposed.values()), f"published beyond 127.0.0.1: {exposed}"
    assert all(published(SERVICES[name]) for name in ("kafka", "worker", "opensearch"))


def kafka_listeners() -> dict[str, tuple[str, str]]:
    """Kafka's listeners: name -> (port, security protocol)."""
    kafka = env(SERVICES["kafka"])
    protocols = dict(e.split(":") for e in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    ports = {e.split("://")[0]: e.rsplit(":", 1)[1] for e in kafka["KAFKA_LISTENERS"].split(",")}
    return {name: (port, protocols[name]) for name, port in ports.items()}


def test_kafka_publishes_no_unauthenticated_listener():
    listeners = kafka_listeners()
    published_ports = {port for _, port in published(SERVICES["kafka"])}
    by_port = {port: (name, protocol) for name, (port, protocol) in listeners.items()}
    assert published_ports <= set(by_port), "a published port with no listener behind it"
    for port in published_ports:
        name, protocol = by_port[port]
        assert protocol in ("SASL_PLAINTEXT", "SASL_SSL"), f"listener {name} ({protocol}) is published"
        mechanisms = env(SERVICES["kafka"])[f"KAFKA_LISTENER_NAME_{name}_SASL_ENABLED_MECHANISMS"]
        assert set(mechanisms.split(",")) <= {"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"}
    # The workers' listener carries no authentication: it must stay on the compose network.
    inter_broker = env(SERVICES["kafka"])["KAFKA_INTER_BROKER_LISTENER_NAME"]
    assert listeners[inter_broker][0] not in published_ports


def test_kafka_authorizes_with_acls_and_makes_the_chat_user():
    kafka = env(SERVICES["kafka"])
    assert kafka["KAFKA_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer")
    assert kafka.get("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND", "false") == "false"
    # Only the unauthenticated internal listeners act as the super user.
    assert kafka["KAFKA_SUPER_USERS"] == "User:ANONYMOUS"
    init = SERVICES["kafka-init"]
    assert init["image"] == SERVICES["kafka"]["image"]
    assert init["depends_on"]["kafka"]["condition"] == "service_healthy"
    (script,) = mounts(init).values()
    text = script.read_text()
    (secret,) = init["secrets"]
    assert secret_file(secret) in text
    assert "SCRAM-SHA-512=[" in text and "kafka-acls.sh" in text and "--allow-principal" in text
    assert all(topic in text for topic in ("chat.turns", "memory.commands", "memory.proactivity"))
    assert "--resource-pattern-type prefixed --group chat-" in text, "never the workers' group"


def test_opensearch_runs_its_security_plugin_with_a_password_from_a_secret():
    opensearch = SERVICES["opensearch"]
    settings = env(opensearch)
    assert settings.get("DISABLE_SECURITY_PLUGIN", "false") != "true"
    assert settings.get("plugins.security.disabled", "false") != "true"
    (secret,) = opensearch["secrets"]
    start = mounts(opensearch)["/deploy/opensearch-start.sh"]
    assert opensearch["entrypoint"] == ["bash", "/deploy/opensearch-start.sh"]
    text = start.read_text()
    assert secret_file(secret) in text and "hash.sh" in text and "internal_users.yml" in text
    assert "opensearch-docker-entrypoint.sh" in text
    assert secret_file(secret) in " ".join(opensearch["healthcheck"]["test"])
    # The workers log in with that password, read from the same secret when they start.
    assert secret in WORKER["secrets"]
    command = " ".join(WORKER["command"])
    assert f"OPENSEARCH_URL=http://memstream:$$(cat {secret_file(secret)})@opensearch:9200" in command
    assert "OPENSEARCH_URL" not in env(WORKER)


def test_no_password_is_written_in_the_compose_file():
    """A credential reaches a service as a compose secret (a file under /run/secrets), or is
    interpolated from .env; never a literal in the file."""
    literals = []
    for name, service in SERVICES.items():
        for key, value in env(service).items():
            if SECRET_NAME.search(key) and not (value.startswith("${") or value.startswith("/run/secrets/")):
                literals.append(f"{name}: {key}")
    assert not literals, f"credentials written in docker-compose.yml: {literals}"
    text = (ROOT / "docker-compose.yml").read_text()
    # `password: x`, `PASSWORD=x` or a default `${X_PASSWORD:-x}`; `${X_PASSWORD:?message}` is none
    assert not re.search(r"password:?[=:-][ \t]*(?![$\"{/?])\S", text, re.I), "a literal password"
    for name, secret in COMPOSE["secrets"].items():
        assert set(secret) <= {"environment", "file"}, f"secret {name}"
    grafana = env(SERVICES["grafana"])
    assert "GF_SECURITY_ADMIN_PASSWORD" not in grafana
    assert grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"] == secret_file("grafana_admin_password")
    assert grafana["GF_AUTH_ANONYMOUS_ENABLED"] == "false"


def test_the_deploy_scripts_are_valid_bash():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    for script in ("kafka-init.sh", "opensearch-start.sh"):
        result = subprocess.run([bash, "-n", str(ROOT / "deploy" / script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
