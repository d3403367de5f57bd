"""The knowledge tier: the notebook vault's layout, its idempotent bootstrap, its page list
(which never includes a symlinked file leading outside the vault) and a signature of its files."""

import hashlib
import os
import stat
from pathlib import Path

ZONES = (
    "0_Inbox",
    "1_Projects",
    "2_Wiki/Concepts",
    "2_Wiki/Literature",
    "2_Wiki/Syntheses",
    "2_Wiki/Entities",
    "3_Personal",
    "4_Assets",
    "5_Archives",
)
NAV_FILES = ("schema.md", "index.md", "log.md")

SCHEMA_MD = """# Notebook Schema

An OKF-inspired profile for this vault. The dream (consolidation) maintains it; people may edit it.

## Zones
- `0_Inbox/` raw material to process and move
- `1_Projects/` active work
- `2_Wiki/` cross-linked knowledge: Concepts, Literature, Syntheses, Entities
- `3_Personal/` long-term claims about the user, one claim a bullet
- `4_Assets/` binaries, never modified
- `5_Archives/` finished work

## Frontmatter
- `type`, `title`, `description`, `tags`
- `status`: draft | stable | deprecated (`active` reads as stable; missing means stable)
- `updated`: YYYY-MM-DD
- `stale_after`: YYYY-MM-DD or `never`. On `3_Personal/` pages it follows the category:
  personal never; preference +365 days; technical +182; goal +91; context and interaction +21;
  general +91.
- `verified`: list of `{by, at}`; a `human:<id>` actor is the strongest evidence there is.

## Claims
- A repeat of a claim is recorded on its bullet, never as a second bullet:
  `- Wants water reminders hourly from 9 AM to 9 PM. (confirmed 12x, last 2026-08-20)`
- A contradiction is not a confirmation: it resets the count and takes the correction path
  ("Currently X (since D); previously Y").
- Nothing is deleted here: deprecate instead. Removal from retrieval is a tombstone.
"""

INDEX_MD = """# Notebook Index

Last updated: -

*The dream and the ingest skill populate this page.*
"""

LOG_MD = "# Notebook Log\n\n"


def bootstrap_vault(vault: Path) -> list[Path]:
    """Create what is missing of the vault's skeleton; never overwrite a file. Returns what it created."""
    created: list[Path] = []
    for zone in (*ZONES, ".state"):
        path = vault / zone
        if not path.exists():
            try:  # another process (or thread) bootstrapping the same vault may create it first
                path.mkdir(parents=True)
                created.append(path)
            except FileExistsError:
                pass
    for name, body in (("schema.md", SCHEMA_MD), ("index.md", INDEX_MD), ("log.md", LOG_MD)):
        path = vault / name
        if not path.exists():
            # "x" mode: if something created the file since the check, it is left alone.
            try:
                with open(path, "x", encoding="utf-8") as fh:
                    fh.write(body)
                created.append(path)
            except FileExistsError:
                pass
    return created


def list_pages(vault: Path, under: str | None = None, outside: list[str] | None = None) -> list[str]:
    """Indexed vault pages as root-relative POSIX paths, sorted.

    Every ``*.md`` under the vault except anything inside a ``.state`` folder (or any hidden
    folder), the root navigation files ``schema.md``, ``index.md`` and ``log.md`` (any case), and
    a symlinked file that leads outside the vault (``leads_outside``): whatever it points at is
    not the vault's, so no reader (the index, the dream, MEMORY.md) may take it in. Such links
    are appended to ``outside`` when the caller passes a list, so it can warn about them.
    Symlinked folders are not walked. ``under`` (a folder such as ``3_Personal``) walks that
    folder alone: the same pages as the whole listing's under it, without walking the rest.
    """
    root = vault / under.strip("/") if under else vault
    if not root.is_dir():
        return []
    pages = []
    for path in root.rglob("*.md"):
        rel = path.relative_to(vault)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue
        if len(rel.parts) == 1 and rel.name.lower() in NAV_FILES:
            continue
        if leads_outside(vault, path):
            if outside is not None:
                outside.append(rel.as_posix())
            continue
        if path.is_file():
            pages.append(rel.as_posix())
    return sorted(pages)


def leads_outside(vault: Path, path: Path) -> bool:
    """Whether ``path`` (inside ``vault``) is a symlink whose target lies outside the vault."""
    if not path.is_symlink():
        return False
    try:
        return not path.resolve().is_relative_to(vault.resolve())
    except (OSError, RuntimeError):  # a loop: it leads nowhere, which is not inside either
        return True


def outside_link_warning(label: str, path: Path) -> str:
    """The warning for a page symlink that leads outside the vault (``label``: how to name it)."""
    try:
        target = str(path.readlink())
    except OSError:
        target = "an unreadable target"
    return (
        f"{label} is a symlink to {target}, outside the vault: not indexed (and not read by the "
        "dream), so nothing outside the vault becomes searchable. Fix: if the file belongs in "
        "memory, replace the link with a copy of the file; otherwise remove the link."
    )


def vault_signature(vault: Path) -> str:
    """A digest of every file and folder under the vault: each file by name, mode, size and change
    times, each folder by name and mode (one stat each, nothing read). It changes when a person
    edits, adds, removes, renames or re-permissions anything there. Hidden entries (the home's
    ``.state/``, an editor's settings) and the root's navigation files (``log.md``, which every
    dream run appends to, ``index.md``, ``schema.md``) are left out: the dream's own bookkeeping
    does not change it."""
    entries: list[str] = []
    for folder, dirs, files in os.walk(vault):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = os.path.relpath(folder, vault)
        for name in dirs + sorted(files):
            if name.startswith(".") or (rel == "." and name in NAV_FILES):
                continue
            try:
                st = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                entries.append(f"{rel}/{name}\0{st.st_mode}")
            else:
                entries.append(
                    f"{rel}/{name}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
                )
    return hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape")).hexdigest()[:16]
