"""What a dream would do, shown on a clone: the real home is never touched.

The clone is a temporary directory holding copies of the daily logs, the core files, the vault
(with its ``.state/``) and, when the index is local, nothing else: the clone's settings point at
the real index, which a dream only reads (the agent's memory search; retrieval never writes).
The real runner runs there (``run_dream``, as many ticks as asked), then the vault is compared
file by file and a unified diff is returned with the runner's results. The seeds' dry-run harness
cloned the data directory and redirected the mounted vault for the same reason: the vault can
live outside the home (the suzent profile's ``/mnt/notebook`` volume), so the clone copies the
vault from wherever ``resolve_notebook_dir()`` put it.
"""

import difflib
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memory_assets.core.dream.consolidator import Consolidator
from memory_assets.core.dream.runner import DreamResult, run_dream
from memory_assets.core.settings import Settings

TEXT_SUFFIXES = {".md", ".txt", ".json", ".jsonl", ".yaml", ".yml"}


@dataclass
class DryRun:
    results: list[DreamResult] = field(default_factory=list)
    diff: str = ""
    files_changed: list[str] = field(default_factory=list)


def _files(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def dry_run(
    settings: Settings,
    consolidator: Consolidator,
    *,
    ticks: int = 1,
    force: bool = False,
    lint_only: bool = False,
    now: datetime | None = None,
) -> DryRun:
    """Run the dream ``ticks`` times (stopping when it idles) on a clone; return the diff."""
    out = DryRun()
    with tempfile.TemporaryDirectory(prefix="memory-assets-dry-run-") as tmp:
        root = Path(tmp)
        clone = Settings.load(
            root / "home",
            "default",
            env={},
            index_uri=settings.index_uri,
            notebook_dir=str(root / "home" / "notebook"),
        )
        clone = _with_knobs(clone, settings)
        shutil.copytree(settings.memory_dir, clone.memory_dir, symlinks=True, dirs_exist_ok=True)
        shutil.copytree(settings.notebook_dir, clone.notebook_dir, symlinks=True, dirs_exist_ok=True)
        before = _files(clone.notebook_dir)
        for _ in range(max(1, ticks)):
            result = run_dream(clone, consolidator, now=now, force=force, lint_only=lint_only)
            out.results.append(result)
            if result.kind in ("idle", "busy") or not result.ok or lint_only:
                break
        after = _files(clone.notebook_dir)
        chunks = []
        for rel in sorted(set(before) | set(after)):
            old, new = before.get(rel), after.get(rel)
            if old == new:
                continue
            out.files_changed.append(rel)
            if Path(rel).suffix not in TEXT_SUFFIXES:
                chunks.append(f"Binary file notebook/{rel} changed\n")
                continue
            chunks.append(
                "".join(
                    difflib.unified_diff(
                        (old or b"").decode("utf-8", "replace").splitlines(keepends=True),
                        (new or b"").decode("utf-8", "replace").splitlines(keepends=True),
                        fromfile=f"a/notebook/{rel}" if old is not None else "/dev/null",
                        tofile=f"b/notebook/{rel}" if new is not None else "/dev/null",
                    )
                )
            )
        out.diff = "".join(c if c.endswith("\n") else c + "\n" for c in chunks)
    return out


def _with_knobs(clone: Settings, settings: Settings) -> Settings:
    """The clone's paths with the real home's knobs (pacing, model, consolidator)."""
    from dataclasses import replace

    keep = {
        name: getattr(settings, name)
        for name in settings.__dataclass_fields__
        if name
        not in (
            "home",
            "profile",
            "memory_dir",
            "notebook_dir",
            "index_uri",
            "transcripts_dir",
            "confirmations_file",
            "superseded_file",
            "dream_state_file",
            "memory_md_file",
        )
    }
    return replace(clone, **keep)
