"""The deployment files under ``deploy/`` and the top-level ``dagster_cloud.yaml`` stay in line
with the code: the run queue's limits are those ``memory-assets dagster-yaml`` writes, the code
location's module is the one ``workspace.yaml`` loads, every variable they set is one the code
reads, and the versions are the pinned ones. Nothing here starts a cluster (there is none where
this project is tested: docs/guides/scale.md says which claims were tested and which not)."""

import re
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from memory_assets.defs.instance import TAG_LIMITS

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
MODULE = "memory_assets.definitions"
PREFIXES = ("MEMORY_", "HF_", "LANCEDB_", "DAGSTER_")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _limits_are_the_instances(limits: list[dict[str, Any]]) -> None:
    assert [limit["key"] for limit in limits] == [key for key, _ in TAG_LIMITS]
    for limit in limits:
        assert limit["value"] == {"applyLimitPerUniqueValue": True}, limit
        assert limit["limit"] == 1, limit


def test_the_helm_values_queue_runs_with_the_instances_limits() -> None:
    values = _load(DEPLOY / "helm" / "values.yaml")
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    assert coordinator["enabled"] is True and coordinator["type"] == "QueuedRunCoordinator"
    _limits_are_the_instances(coordinator["config"]["queuedRunCoordinator"]["tagConcurrencyLimits"])
    assert values["runLauncher"]["type"] == "K8sRunLauncher"


def test_the_dagster_plus_settings_queue_runs_with_the_instances_limits() -> None:
    settings = _load(DEPLOY / "dagster-plus" / "deployment_settings.yaml")
    _limits_are_the_instances(settings["concurrency"]["runs"]["tag_concurrency_limits"])


def test_every_deployment_loads_the_module_workspace_yaml_loads() -> None:
    [workspace] = _load(ROOT / "workspace.yaml")["load_from"]
    assert workspace["python_module"]["module_name"] == MODULE
    [cloud] = _load(ROOT / "dagster_cloud.yaml")["locations"]
    assert cloud["code_source"] == {"module_name": MODULE}
    assert cloud["location_name"] == workspace["python_module"]["location_name"]
    [deployment] = _load(DEPLOY / "helm" / "values.yaml")["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["--module-name", MODULE]
    assert not (DEPLOY / "dagster-plus" / "dagster_cloud.yaml").exists()  # one location file


def _set_variables() -> dict[str, str]:
    """Every setting of this project or its stack (``MEMORY_*``, ``HF_*``, ``LANCEDB_*``,
    ``DAGSTER_*``) that the deployment files set, with where; Python's and pip's own are not."""
    found: dict[str, str] = {}
    [deployment] = _load(DEPLOY / "helm" / "values.yaml")["dagster-user-deployments"]["deployments"]
    for item in deployment["env"]:
        found[item["name"]] = "deploy/helm/values.yaml"
    for item in _load(DEPLOY / "dagster-plus" / "agent-values.yaml")["workspace"]["envVars"]:
        found[item.partition("=")[0]] = "deploy/dagster-plus/agent-values.yaml"
    for line in (DEPLOY / "Dockerfile").read_text(encoding="utf-8").splitlines():
        found |= {
            m: "deploy/Dockerfile" for m in re.findall(r"\b([A-Z][A-Z0-9_]+)=", line) if m != "DAGSTER_CLOUD"
        }
    return {name: where for name, where in found.items() if name.startswith(PREFIXES)}


@pytest.mark.parametrize("variable", sorted(_set_variables()))
def test_every_variable_the_deployments_set_is_a_documented_setting(variable: str) -> None:
    settings = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    assert f"`{variable}`" in settings, (
        f"{_set_variables()[variable]} sets {variable}, a setting nobody documents"
    )


def test_the_image_and_the_chart_take_the_pinned_versions() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [torch] = re.findall(r"torch==[\d.]+", makefile)
    assert torch in dockerfile
    assert "'.[celery]'" in dockerfile  # the extra exists: pyproject's optional dependencies
    assert f"--version {version('dagster')}" in (DEPLOY / "helm" / "values.yaml").read_text(encoding="utf-8")
    assert f"DAGSTER_CLOUD={version('dagster')}" in dockerfile
