"""The Helm values under ``deploy/`` checked against the schemas of what reads them, offline.

Two checks, and for each a proof that it fails on a misspelt key:

- **Kubernetes objects** (runs everywhere): every Kubernetes object the values hand to a pod (an
  environment variable, a secret reference, a volume, a volume mount, resources, a run's container
  config) is checked against the Kubernetes API's own JSON schema for :data:`KUBERNETES`, the
  strict ``_definitions.json`` that kubernetes-validate (PyPI) ships: a property the API does not
  declare is an error. These are the definitions the charts' schemas point their ``$ref`` at.
- **The charts' own schemas** (runs when the charts are there): ``deploy/helm/values.yaml`` against
  the ``values.schema.json`` of every Dagster chart and ``deploy/dagster-plus/agent-values.yaml``
  against every Dagster+ agent chart. The charts are the folders of
  ``../shared/reference/charts/`` beside the repository (:data:`SHARED_CHARTS`; its README names
  their sources), each told Dagster's or the agent's by its schema; ``DEPLOY_DAGSTER_CHART`` and
  ``DEPLOY_AGENT_CHART`` name others instead (chart directories or ``.tgz`` files, several
  separated by ``os.pathsep``). Neither chart is on PyPI or Debian and a copy may not be committed
  here, so without them these tests skip and say so.

How a chart's schema is applied (JSON Schema 2020-12, so a keyword beside a ``$ref`` counts, as
the charts mean it: ``startupProbe`` is a Kubernetes ``Probe`` plus ``enabled``), and where it is
stricter than ``helm`` (so that a misspelt key fails here even where the chart would ignore it):

- **as helm applies it**, to the values merged over the chart's defaults (when the chart has
  them) and to the chart's defaults alone: the schema as it is, its ``$ref`` to a remote
  ``_definitions.json`` (kubernetesjsonschema.dev, or its mirror in later charts) resolved to
  kubernetes-validate's definitions for :data:`KUBERNETES` (offline; not the strict ones, as
  helm's are not);
- **strict**, to the values file alone (an override: what the chart's defaults supply is not in
  it, so no ``required`` list applies): every object of the schema that declares properties
  without saying what else it takes (the root whatever it says, and every object under ``$defs``,
  ``definitions`` or nested in them) rejects a key it does not declare: ``helm`` accepts an
  undeclared key (``dagsterDeamon``) and the chart never reads it. An object that is a Kubernetes
  object (a remote ``$ref``) takes the properties of the strict Kubernetes definition and those
  declared beside the ``$ref``, and nothing else; the objects inside it are strict Kubernetes.
  The chart's own defaults pass this check too, which is what shows it closes nothing the chart
  reads.
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


def _deepest(error: ValidationError) -> ValidationError:
    """The error under an ``anyOf`` that says what is wrong: the branch that got furthest, not
    the one that wanted a null."""
    while error.context:
        error = max(error.context, key=lambda e: (e.validator != "type", len(e.absolute_path)))
    return error


def _report(error: ValidationError, origin: Path_ = ()) -> str:
    """One line: the key's path in the values file and the deepest reason."""
    error = _deepest(error)
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
        validator = jsonschema.Draft202012Validator(schema, registry=REGISTRY)
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
            k: (
                f"{DEFINITIONS_URI}{v}"
                if k == "$ref" and isinstance(v, str) and v.startswith("#")
                else _absolute(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_absolute(v) for v in node]
    return node


# --- the charts' schemas ---------------------------------------------------------------------

# The shared reference charts, beside the repository (a CI clone has ``shared`` linked beside it).
SHARED_CHARTS = ROOT.parent / "shared" / "reference" / "charts"
LOOSE = f"urn:kubernetes:v{KUBERNETES}/_definitions.json"
OPEN = f"urn:kubernetes:v{KUBERNETES}-strict-open/_definitions.json"


def _loose_definitions() -> dict[str, Any]:
    """kubernetes-validate's definitions as helm's mirror has them (no object closed)."""
    folder = files("kubernetes_validate") / "kubernetes-json-schema" / f"v{KUBERNETES}-local"
    document = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    return {**document, "$id": LOOSE, "definitions": document["$defs"]}


def _open_definitions() -> dict[str, Any]:
    """The strict definitions with each one's own ``additionalProperties`` left out, every
    reference inside pointing back at the strict ones: a chart object that is a Kubernetes object
    plus keys of its own closes itself (``unevaluatedProperties``) over both."""
    opened = {
        name: _absolute({k: v for k, v in definition.items() if k != "additionalProperties"})
        for name, definition in DEFINITIONS["$defs"].items()
    }
    return {"$schema": DEFINITIONS["$schema"], "$id": OPEN, "$defs": opened, "definitions": opened}


def _refuse(uri: str) -> Resource[Any]:
    raise LookupError(f"{uri}: a schema reference this check does not resolve offline")


# The Kubernetes definitions at their own URIs; a chart's references to a remote
# ``_definitions.json`` are pointed at one of them (``_localized``), so nothing is fetched or
# looked for (a lookup of a URI not registered makes the registry crawl every document again).
REGISTRY: Registry[Any] = Registry(retrieve=_refuse).with_resources(  # type: ignore[call-arg]
    (uri, Resource.from_contents(document))
    for uri, document in (
        (DEFINITIONS_URI, {**DEFINITIONS, "$id": DEFINITIONS_URI}),
        (OPEN, _open_definitions()),
        (LOOSE, _loose_definitions()),
    )
)


def _remote(ref: str) -> bool:
    """A reference to a remote ``_definitions.json`` (not one of ours, ``urn:kubernetes:...``)."""
    where = ref.partition("#")[0]
    return where.endswith("/_definitions.json") and not where.startswith("urn:")


def _localized(node: Any, uri: str) -> Any:
    """``node`` with each reference to a remote ``_definitions.json`` pointed at ``uri``."""
    if isinstance(node, dict):
        return {
            k: (
                f"{uri}#{v.partition('#')[2]}"
                if k == "$ref" and isinstance(v, str) and _remote(v)
                else _localized(v, uri)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_localized(v, uri) for v in node]
    return node


@dataclass(frozen=True)
class Chart:
    where: str
    schema: dict[str, Any]
    defaults: dict[str, Any] | None
    version: str | None

    @property
    def kind(self) -> str:
        """Whose chart: "dagster" (Dagster's ``helm/dagster``) or "agent" (the Dagster+ agent)."""
        declared = self.schema.get("properties") or {}
        if "dagsterCloud" in declared:
            return "agent"
        if "dagsterWebserver" in declared or "dagster-user-deployments" in declared:
            return "dagster"
        raise ValueError(f"{self.where}: neither Dagster's chart nor the Dagster+ agent's (by its schema)")


def _read_chart(given: str) -> Chart:
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
        raise FileNotFoundError(f"{given}: no values.schema.json there (a chart directory or .tgz)")
    meta = yaml.safe_load(texts["Chart.yaml"]) if "Chart.yaml" in texts else {}
    return Chart(
        where=given,
        schema=json.loads(texts["values.schema.json"]),
        defaults=yaml.safe_load(texts["values.yaml"]) if "values.yaml" in texts else None,
        version=str(meta["version"]) if "version" in meta else None,
    )


VARIABLES = {"dagster": "DEPLOY_DAGSTER_CHART", "agent": "DEPLOY_AGENT_CHART"}


def charts(kind: str) -> list[Chart]:
    """The charts of ``kind`` to check against: those its variable names, else every chart of
    that kind in :data:`SHARED_CHARTS`; skips, saying why, when there is none."""
    given = os.environ.get(VARIABLES[kind])
    if given:
        found = [_read_chart(g) for g in given.split(os.pathsep) if g]
        wrong = [c.where for c in found if c.kind != kind]
        assert not wrong, f"{VARIABLES[kind]} names charts that are not {kind}'s: {wrong}"
        return found
    if not SHARED_CHARTS.is_dir():
        pytest.skip(
            f"no chart to check against: {SHARED_CHARTS} is not there and {VARIABLES[kind]} is not set (give "
            "it a chart directory or .tgz holding values.schema.json; the charts are on neither PyPI nor "
            "Debian and may not be committed here)"
        )
    found = [
        c
        for d in sorted(SHARED_CHARTS.iterdir())
        if (d / "values.schema.json").is_file() and (c := _read_chart(str(d))).kind == kind
    ]
    if not found:
        pytest.skip(f"{SHARED_CHARTS} holds no {kind} chart (values.schema.json)")
    return found


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


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")


def _subschemas(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The schemas directly inside a schema (never its ``default`` or ``examples``: data)."""
    for key in _SCHEMA_MAPS:
        for child in (node.get(key) or {}).values():
            if isinstance(child, dict):
                yield child
    for key in _SCHEMA_LISTS:
        for child in node.get(key) or []:
            if isinstance(child, dict):
                yield child
    for key in _SCHEMA_ONE:
        child = node.get(key)
        if isinstance(child, dict):
            yield child
        elif isinstance(child, list):  # Draft 7's tuple ``items``
            yield from (c for c in child if isinstance(c, dict))


def _strict(schema: dict[str, Any], *, required: bool) -> dict[str, Any]:
    """The chart's schema closed as the module docstring says, without its ``required`` lists
    unless ``required``."""
    schema = copy.deepcopy(schema)

    def close(node: dict[str, Any], root: bool) -> None:
        ref = node.get("$ref")
        if isinstance(ref, str) and _remote(ref):
            # A Kubernetes object, maybe plus keys of the chart's own.
            node["$ref"] = OPEN + "#" + ref.partition("#")[2]
            if node.get("additionalProperties") is True:
                del node["additionalProperties"]
            if "additionalProperties" not in node:
                node["unevaluatedProperties"] = False
        elif node.get("properties") and (root or "additionalProperties" not in node):
            node.pop("additionalProperties", None)
            node["unevaluatedProperties"] = False
        if not required and isinstance(node.get("required"), list):
            del node["required"]
        for child in _subschemas(node):
            close(child, False)

    close(schema, True)
    return _localized(schema, DEFINITIONS_URI)  # any reference left: the strict definitions


def _validate(
    schema: dict[str, Any], instance: Any, registry: Registry[Any], note: str, known: Any = None
) -> list[str]:
    """Each error of ``instance`` against ``schema``, one line each. With ``known`` (the chart's
    defaults), a key the closed schema does not declare is still accepted where the defaults
    have it: the defaults hold every key the chart reads, declared in its schema or not
    (``fullnameOverride``, a deployment's ``service``)."""
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
    lines = []
    for error in errors:
        deepest = _deepest(error)
        if (
            known is not None
            and deepest.validator == "unevaluatedProperties"
            and isinstance(deepest.instance, dict)
        ):
            where = tuple(deepest.absolute_path)
            flagged = [k for k in deepest.instance if repr(k) in deepest.message]
            unknown = [k for k in flagged if not _has(known, (*where, k))]
            if not unknown:
                continue
            lines.append(
                f"{_where(where)}: {', '.join(map(repr, unknown))} neither declared in the chart's schema "
                f"nor in its defaults{note}"
            )
            continue
        lines.append(_report(error) + note)
    return lines


def _has(values: Any, path: Path_) -> bool:
    """Whether ``values`` has ``path``, a list's index standing for any of its items."""
    if not path:
        return True
    step, rest = path[0], path[1:]
    if isinstance(values, dict):
        return isinstance(step, str) and step in values and _has(values[step], rest)
    if isinstance(values, list) and isinstance(step, int):
        return any(_has(item, rest) for item in values)
    return False


def chart_problems(chart: Chart, values: Any) -> list[str]:
    """Every key of ``values`` the chart's schema rejects (see the module's docstring for how):
    with the chart's defaults, their merge with ``values`` as ``helm`` applies the schema; and
    ``values`` alone against the strict schema (no ``required``)."""
    problems = []
    if chart.defaults is not None:
        merged = _coalesce(chart.defaults, values)
        problems += _validate(
            _localized(chart.schema, LOOSE), merged, REGISTRY, " (merged over the chart's defaults)"
        )
    return problems + _validate(_strict(chart.schema, required=False), values, REGISTRY, "", chart.defaults)


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
    """The misspellings the check finds nothing new in: a problem the values have already (one
    always there) does not count as catching the misspelling."""
    already = set(check(values))
    passing = []
    for path in paths:
        wrong_values, wrong = _misspelt(values, path)
        if not set(check(wrong_values)) - already:
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


VALUES = {"dagster": HELM_VALUES, "agent": AGENT_VALUES}


@pytest.mark.parametrize("kind", VALUES)
def test_the_charts_own_defaults_pass_both_checks(kind: str) -> None:
    """Each chart's defaults meet its schema as helm applies it and the strict one: the strict
    check closes nothing the chart itself sets."""
    checked = 0
    problems = []
    for chart in charts(kind):
        if chart.defaults is None:
            continue
        checked += 1
        problems += [
            f"{chart.where}: {p}"
            for p in _validate(_localized(chart.schema, LOOSE), chart.defaults, REGISTRY, "")
        ]
        strict = _strict(chart.schema, required=False)
        problems += [
            f"{chart.where}: {p} (strict)"
            for p in _validate(strict, chart.defaults, REGISTRY, "", chart.defaults)
        ]
    if not checked:
        pytest.skip(f"no {kind} chart with its values.yaml (the defaults) to check")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("kind", VALUES)
def test_the_values_meet_each_charts_schema(kind: str) -> None:
    file = VALUES[kind]
    problems = []
    for chart in charts(kind):
        _pinned(chart, version("dagster"))
        problems += [f"{chart.where}: {p}" for p in chart_problems(chart, _load(file))]
    assert not problems, f"{file.relative_to(ROOT)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("kind", VALUES)
def test_every_key_of_the_values_misspelt_fails_a_check(kind: str) -> None:
    file = VALUES[kind]
    values = _load(file)
    paths = list(_keys(values))
    assert len(paths) >= 20, paths  # every key is tried, not a few
    passing = []
    for chart in charts(kind):
        passing += [
            f"{chart.where}: {p}"
            for p in _misspelt_keys_that_pass(
                paths, values, lambda v, chart=chart: chart_problems(chart, v) + kubernetes_problems(file, v)
            )
        ]
    assert not passing, "misspelt keys no check rejects:\n" + "\n".join(passing)


def test_a_misspelt_top_level_key_fails_against_each_dagster_chart() -> None:
    """``dagsterDeamon``: helm accepts it (the root of the newer schema says it takes any key) and
    the chart never reads it; the strict check must not."""
    values = _load(HELM_VALUES)
    wrong = {("dagsterDeamon" if k == "dagsterDaemon" else k): v for k, v in values.items()}
    for chart in charts("dagster"):
        new = set(chart_problems(chart, wrong)) - set(chart_problems(chart, values))
        assert any("dagsterDeamon" in p for p in new), f"{chart.where}: dagsterDeamon accepted"
