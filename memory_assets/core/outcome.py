"""Results as plain data. The result of a check is one type shared by the audit tier's invariant
checks (``core/audit/checks.py``) and the legacy runner's asset check (``core/legacy/find.py``), so
both depend on the ground rather than one on the other; ``fields_of`` is how any result lists its
plain fields in its ``to_dict`` or ``summary``.

A ``CheckOutcome`` says whether the check passed, how severe a failure is (``error`` blocks: the CLI
exits 1; ``warn`` is reported and does not), a one-line summary, problem lines that each name the
file or day and the fix (at most ``MAX_PROBLEMS``: ``capped``), numbers for metadata, ``details``
(the rows of a table, which the Dagster checks render as markdown) and warnings worth reading that
are not failures. It is plain data: the CLI prints ``to_dict()`` as JSON and the Dagster layer maps
it to an ``AssetCheckResult``.
"""

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warn"]
MAX_PROBLEMS = 50  # problem lines an outcome lists; the counts in its metadata are always complete


def fields_of(result: object, *names: str) -> dict[str, Any]:
    """The attributes ``names`` of ``result``, by name and in that order, as they are (no copy): the
    plain part of a result's ``to_dict``; the caller adds the fields that need converting."""
    return {name: getattr(result, name) for name in names}


@dataclass
class CheckOutcome:
    name: str
    passed: bool
    severity: Severity
    summary: str
    problems: list[str] = field(default_factory=list)  # each names the file or day and the fix
    metadata: dict[str, int | float | str] = field(default_factory=dict)
    details: list[dict[str, str | int]] = field(default_factory=list)  # table rows (markdown in the UI)
    warnings: list[str] = field(default_factory=list)  # worth reading, not failures

    @property
    def blocking(self) -> bool:
        """A failure of error severity (the CLI exits 1)."""
        return not self.passed and self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def capped(problems: list[str]) -> list[str]:
    """``problems`` as an outcome lists them: at most ``MAX_PROBLEMS`` lines, then one line saying
    how many more there are."""
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more (the counts are complete)"]
