"""The Helm values under ``deploy/`` checked against the schemas of what reads them, offline.

Two checks, and for each a proof that it fails on a misspelt key:

- **Kubernetes objects** (runs everywhere): every Kubernetes object the values hand to a pod (an
  environment variable, a secret reference, a volume, a volume mount, resources, a run's container
  config) is checked against the Kubernetes API's own JSON schema for :data:`KUBERNETES`, the
  strict ``_definitions.json`` that kubernetes-validate (PyPI) ships: a property the API does not
  declare is an error. These are the definitions the charts' schemas point their ``$ref`` at.
- **The charts' own schemas** (runs when the chart is given): ``deploy/helm/values.yaml`` against
  the ``values.schema.json`` of Dagster's chart (``DEPLOY_DAGSTER_CHART``) and
  ``deploy/dagster-plus/agent-values.yaml`` against the Dagster+ agent's chart
  (``DEPLOY_AGENT_CHART``). Each variable names a chart directory or a chart ``.tgz`` holding
  ``values.schema.json`` (and ``values.yaml``, the chart's defaults, if there). Neither chart nor
  its schema is on PyPI or Debian, and a copy of either may not be committed here, so without
  them these tests skip and say so: docs/guides/scale.md says what was run and against what.

How a chart's schema is applied, and where it is stricter than ``helm`` (so that a misspelt key
fails here even where the chart would ignore it):

- its ``$ref`` to a remote ``_definitions.json`` (kubernetesjsonschema.dev, or its mirror in
  later charts) resolve to kubernetes-validate's strict definitions for :data:`KUBERNETES`, so
  nothing is fetched and an undeclared property of a Kubernetes object fails;
- each of its objects that declares its properties (the root and every definition) also rejects a
  key it does not declare: ``helm`` accepts an undeclared top-level key (e.g. ``dagsterDeamon``)
  and the chart never reads it;
- the closed objects and the left-out ``required`` lists apply to the values file alone (an
  override: what the chart's defaults supply is not in it); with the chart's defaults given, the
  values merged over them are also validated against the schema as it is, as ``helm`` does.
"""

import copy
import json
import os
import tarfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[1]
HELM_VALUES = ROOT / "deploy" / "helm" / "values.yaml"
AGENT_VALUES = ROOT / "deploy" / "dagster-plus" / "agent-values.yaml"
# The Kubernetes release whose API schema the objects are checked against (kubernetes-validate
# 1.37.0 ships 1.25.0 to 1.37.0).
KUBERNETES = "1.33.0"
Path_ = tuple[str | int, ...]


def _definitions() -> dict[str, Any]:
    """kubernetes-validate's strict definitions (JSON Schema 2020-12, under ``$defs``), also under
    ``definitions``, where the charts' schemas point (``.../_definitions.json#/definitions/...``)."""
    folder = files("kubernetes_validate") / "kubernetes-json-schema" / f"v{KUBERNETES}-local-strict"
    document = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    return {**document, "definitions": document["$defs"]}


DEFINITIONS = _definitions()
DEFINITIONS_URI = f"urn:kubernetes:v{KUBERNETES}-strict/_definitions.json"


def _retrieve(uri: str) -> Resource[Any]:
    """Every ``_definitions.json`` a schema points at is the local strict one; nothing else is."""
    if uri.endswith("/_definitions.json"):
        return Resource.from_contents(DEFINITIONS)
    raise LookupError(f"{uri}: a schema reference this check does not resolve offline")


REGISTRY: Registry[Any] = Registry(retrieve=_retrieve)  # type: ignore[call-arg]


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _at(value: Any, path: Path_) -> Any:
    for step in path:
        value = value[step]
    return value


def _where(path: Path_) -> str:
    return (
        ".".join(f"[{step}]" if isinstance(step, int) else step for step in path).replace(".[", "[")
        or "(top)"
    )


def _report(error: ValidationError, origin: Path_ = ()) -> str:
    """One line: the key's path in the values file and the deepest reason (not 'not valid under
    any of the given schemas' when a branch of the ``anyOf`` says what is wrong)."""
    while error.context:  # the branch that got furthest, not the one that wanted a null
        error = max(error.context, key=lambda e: (e.validator != "type", len(e.absolute_path)))
    return f"{_where(origin + tuple(error.absolute_path))}: {error.message}"


# --- Kubernetes objects ----------------------------------------------------------------------


def _kubernetes_objects(file: Path, values: Any) -> Iterator[tuple[Path_, str, bool]]:
    """(path in the values, Kubernetes definition, whole object?) for each Kubernetes object the
    values hand to a pod. A run's container config is partial (Dagster merges it into the run's
    container, which it names), so its ``required`` do not apply."""
    if file == HELM_VALUES:
        deployments = _section(values, ("dagster-user-deployments", "deployments"))
        for i, deployment in enumerate(deployments if isinstance(deployments, list) else []):
            base: Path_ = ("dagster-user-deployments", "deployments", i)
            yield from _listed(deployment, base)
            if "resources" in deployment:
                yield base + ("resources",), "io.k8s.api.core.v1.ResourceRequirements", True
        launcher: Path_ = ("runLauncher", "config", "k8sRunLauncher")
        yield from _listed(_section(values, launcher), launcher)
        if _section(values, launcher + ("runK8sConfig", "containerConfig")):
            yield launcher + ("runK8sConfig", "containerConfig"), "io.k8s.api.core.v1.Container", False
    elif file == AGENT_VALUES:
        yield from _listed(_section(values, ("workspace",)), ("workspace",))
        if _section(values, ("workspace", "runK8sConfig", "containerConfig")):
            yield ("workspace", "runK8sConfig", "containerConfig"), "io.k8s.api.core.v1.Container", False
    else:
        raise ValueError(f"{file}: no map of its Kubernetes objects")


def _section(values: Any, path: Path_) -> Any:
    """The mapping at ``path``, or ``{}`` where a key on the way is missing (a misspelt key is
    the charts' schemas' to report, not a crash here)."""
    for step in path:
        values = values.get(step) if isinstance(values, dict) else None
    return values if values is not None else {}


LISTS = {
    "env": "io.k8s.api.core.v1.EnvVar",
    "envSecrets": "io.k8s.api.core.v1.SecretEnvSource",
    "envConfigMaps": "io.k8s.api.core.v1.ConfigMapEnvSource",
    "volumes": "io.k8s.api.core.v1.Volume",
    "volumeMounts": "io.k8s.api.core.v1.VolumeMount",
}


def _listed(section: dict[str, Any], base: Path_) -> Iterator[tuple[Path_, str, bool]]:
    for key, definition in LISTS.items():
        items = section.get(key)
        if isinstance(items, list):  # ``env`` may also be a plain name -> value map
            for i in range(len(items)):
                yield base + (key, i), definition, True


def kubernetes_problems(file: Path, values: Any) -> list[str]:
    """Every Kubernetes object of ``values`` that the Kubernetes API's schema rejects, one line
    each (empty when all are valid)."""
    problems = []
    for path, definition, whole in _kubernetes_objects(file, values):
        schema: dict[str, Any] = {"$ref": f"{DEFINITIONS_URI}#/definitions/{definition}"}
        if not whole:  # the definition's properties, none of its ``required``
            schema = {k: v for k, v in DEFINITIONS["$defs"][definition].items() if k != "required"}
            schema = {**schema, "$id": "urn:partial", "properties": _absolute(schema["properties"])}
        validator = jsonschema.Draft7Validator(schema, registry=REGISTRY)
        problems += _resource_name_problems(path, definition, _at(values, path))
        problems += [
            f"{_report(e, path)} (Kubernetes {KUBERNETES}: {definition})"
            for e in validator.iter_errors(_at(values, path))
        ]
    return problems


def _resource_name_problems(path: Path_, definition: str, value: Any) -> list[str]:
    """A container's requests and limits are a free map in the schema; the API server takes a
    standard resource name there (``cpu``, ``memory``, ``ephemeral-storage``, ``hugepages-<size>``)
    or a domain-qualified one (``nvidia.com/gpu``), and rejects the pod otherwise."""
    if definition == "io.k8s.api.core.v1.Container" and isinstance(value, dict):
        path, value = path + ("resources",), value.get("resources")
    elif definition != "io.k8s.api.core.v1.ResourceRequirements":
        return []
    problems = []
    for kind in ("requests", "limits"):
        for name in (value or {}).get(kind) or {}:
            if not (name in STANDARD_RESOURCES or name.startswith("hugepages-") or "/" in name):
                problems.append(
                    f"{_where(path + (kind, name))}: {name!r} is not a resource name the Kubernetes API server "
                    f"accepts (one of {', '.join(STANDARD_RESOURCES)}, hugepages-<size>, or domain/name)"
                )
    return problems


STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _absolute(node: Any) -> Any:
    """The definitions' own ``#/definitions/...`` references, pointed back at their document."""
    if isinstance(node, dict):
        return {
            k: (f"{DEFINITIONS_URI}{v}" if k == "$ref" and v.startswith("#") else _absolute(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_absolute(v) for v in node]
    return node


# --- the charts' schemas ---------------------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    where: str
    schema: dict[str, Any]
    defaults: dict[str, Any] | None
    version: str | None


def _chart(variable: str) -> Chart:
    given = os.environ.get(variable)
    if not given:
        pytest.skip(
            f"{variable} is not set: give it a chart directory or .tgz holding values.schema.json (the chart "
            "is on neither PyPI nor Debian and may not be committed here; docs/guides/scale.md)"
        )
    path = Path(given)
    texts: dict[str, str] = {}
    if path.is_dir():
        texts = {
            n: (path / n).read_text(encoding="utf-8")
            for n in ("values.schema.json", "values.yaml", "Chart.yaml")
            if (path / n).is_file()
        }
    elif path.is_file():
        with tarfile.open(path) as archive:
            for member in archive.getmembers():
                parts = member.name.split("/")
                if len(parts) == 2 and parts[1] in ("values.schema.json", "values.yaml", "Chart.yaml"):
                    handle = archive.extractfile(member)
                    assert handle is not None
                    texts[parts[1]] = handle.read().decode("utf-8")
    if "values.schema.json" not in texts:
        raise FileNotFoundError(
            f"{variable}={given}: no values.schema.json there (a chart directory or .tgz)"
        )
    meta = yaml.safe_load(texts["Chart.yaml"]) if "Chart.yaml" in texts else {}
    return Chart(
        where=given,
        schema=json.loads(texts["values.schema.json"]),
        defaults=yaml.safe_load(texts["values.yaml"]) if "values.yaml" in texts else None,
        version=str(meta["version"]) if "version" in meta else None,
    )


def _coalesce(defaults: Any, values: Any) -> Any:
    """Helm's merge of a chart's defaults and the user's values: maps merge key by key, anything
    else is replaced, and a null in the values removes the default."""
    if not (isinstance(defaults, dict) and isinstance(values, dict)):
        return copy.deepcopy(values)
    merged = copy.deepcopy(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _coalesce(defaults.get(key), value)
    return merged


def _strict(schema: dict[str, Any], *, required: bool) -> dict[str, Any]:
    """The chart's schema where the root and each definition that declares properties reject an
    undeclared key, and without its ``required`` lists unless ``required``."""
    schema = copy.deepcopy(schema)

    def close(node: dict[str, Any]) -> None:
        if node.get("properties") and "$ref" not in node and "additionalProperties" not in node:
            node["additionalProperties"] = False

    def drop_required(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("required", None) if isinstance(node.get("required"), list) else None
            for value in node.values():
                drop_required(value)
        elif isinstance(node, list):
            for value in node:
                drop_required(value)

    close(schema)
    for definition in schema.get("definitions", {}).values():
        close(definition)
    if not required:
        drop_required(schema)
    return schema


def chart_problems(chart: Chart, values: Any) -> list[str]:
    """Every key of ``values`` the chart's schema rejects (see the module's docstring for how):
    with the chart's defaults, their merge with ``values`` against the schema as ``helm`` applies
    it; and ``values`` alone against the schema with undeclared keys closed and no ``required``."""
    checks = [(_strict(chart.schema, required=False), values, "")]
    if chart.defaults is not None:
        checks.insert(
            0, (chart.schema, _coalesce(chart.defaults, values), " (merged over the chart's defaults)")
        )
    problems = []
    for schema, instance, note in checks:
        validator = jsonschema.Draft7Validator(schema, registry=REGISTRY)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        problems += [_report(e) + note for e in errors]
    return problems


def _pinned(chart: Chart, pinned: str) -> None:
    if chart.version != pinned:
        warnings.warn(
            f"{chart.where}: chart version {chart.version or '(no Chart.yaml)'}, not the pinned {pinned}",
            stacklevel=2,
        )


# --- misspelling every key --------------------------------------------------------------------


def _keys(value: Any, path: Path_ = ()) -> Iterator[Path_]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield path + (key,)
            yield from _keys(child, path + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _keys(child, path + (i,))


def _misspelt(values: Any, path: Path_) -> tuple[Any, str]:
    """``values`` with the key at ``path`` misspelt (its last letter dropped)."""
    values = copy.deepcopy(values)
    *parent, key = path
    assert isinstance(key, str)
    section = _at(values, tuple(parent))
    wrong = key[:-1] if len(key) > 1 else key + "x"
    section[wrong] = section.pop(key)
    return values, wrong


def _misspelt_keys_that_pass(paths: list[Path_], values: Any, check: Any) -> list[str]:
    passing = []
    for path in paths:
        wrong_values, wrong = _misspelt(values, path)
        if not check(wrong_values):
            passing.append(f"{_where(path)} misspelt as {wrong!r}")
    return passing


# --- the tests --------------------------------------------------------------------------------

FILES = [HELM_VALUES, AGENT_VALUES]


@pytest.mark.parametrize("file", FILES, ids=lambda f: str(f.relative_to(ROOT)))
def test_the_kubernetes_objects_in_the_values_are_valid_kubernetes(file: Path) -> None:
    values = _load(file)
    assert list(_kubernetes_objects(file, values)), f"{file}: no Kubernetes object found to check"
    problems = kubernetes_problems(file, values)
    assert not problems, f"{file.relative_to(ROOT)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("file", FILES, ids=lambda f: str(f.relative_to(ROOT)))
def test_every_key_of_a_kubernetes_object_misspelt_fails_the_check(file: Path) -> None:
    values = _load(file)
    paths = [
        path + key for path, _, _ in _kubernetes_objects(file, values) for key in _keys(_at(values, path))
    ]
    assert len(paths) >= 8, paths  # the objects' keys are all tried, not a few
    passing = _misspelt_keys_that_pass(paths, values, lambda v: kubernetes_problems(file, v))
    assert not passing, "misspelt keys the check accepts:\n" + "\n".join(passing)


def test_the_helm_values_meet_the_dagster_charts_schema() -> None:
    chart = _chart("DEPLOY_DAGSTER_CHART")
    _pinned(chart, version("dagster"))
    problems = chart_problems(chart, _load(HELM_VALUES))
    assert not problems, f"deploy/helm/values.yaml against {chart.where}:\n" + "\n".join(problems)


def test_the_agent_values_meet_the_agent_charts_schema() -> None:
    chart = _chart("DEPLOY_AGENT_CHART")
    _pinned(chart, version("dagster"))
    problems = chart_problems(chart, _load(AGENT_VALUES))
    assert not problems, f"deploy/dagster-plus/agent-values.yaml against {chart.where}:\n" + "\n".join(
        problems
    )


@pytest.mark.parametrize(
    ("variable", "file"),
    [("DEPLOY_DAGSTER_CHART", HELM_VALUES), ("DEPLOY_AGENT_CHART", AGENT_VALUES)],
    ids=["dagster", "agent"],
)
def test_every_key_of_the_values_misspelt_fails_a_check(variable: str, file: Path) -> None:
    chart = _chart(variable)
    values = _load(file)
    paths = list(_keys(values))
    passing = _misspelt_keys_that_pass(
        paths, values, lambda v: chart_problems(chart, v) + kubernetes_problems(file, v)
    )
    assert not passing, "misspelt keys no check rejects:\n" + "\n".join(passing)
