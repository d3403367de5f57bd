"""MEMORY.md as a person reads and edits it (``memory-assets memory-md``), over a ``Home``.

* ``memory_md_zones``: its zones by the reader's rule (``core/knowledge/memory_md.py``); nothing
  is written;
* ``edit_memory_md``: a person's edit: the manual zone becomes the text under a fresh
  ``verified: human:<who>`` stamp (``who`` by default the home's user id), the generated zone kept.
"""

from memory_assets.core.home import Home
from memory_assets.core.knowledge.memory_md import MemoryMdResult, MemoryMdView, read_zones, stamp_human_edit


def memory_md_zones(home: Home) -> MemoryMdView:
    return read_zones(home.settings.memory_md_path)


def edit_memory_md(home: Home, text: str, who: str | None = None) -> MemoryMdResult:
    settings = home.settings
    return stamp_human_edit(settings.memory_md_path, text, who or settings.user_id)
