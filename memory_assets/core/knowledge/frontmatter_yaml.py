"""The one reader of a page's YAML frontmatter: safe, and bounded in what one page can cost.

Every reader of vault frontmatter (``chunking.parse_page``, ``personal_pages.split_frontmatter``,
the lint) parses it with ``load_yaml``, PyYAML's safe loader with two refusals:

* **No aliases.** ``*name`` re-uses an anchored value, so nine nested levels of ten aliases make a
  one-kilobyte page stand for a billion strings, which anything that prints, renders or walks the
  value (``str()``, ``yaml.dump``) expands until memory runs out. Hand-written and generated
  pages never need them; an alias is refused where it stands (anchors alone are harmless).
* **At most ``MAX_DEPTH`` levels of nesting**, so ``[[[[...]]]]`` cannot exhaust the recursion
  limit.

A refusal is a ``yaml.composer.ComposerError`` (a ``yaml.YAMLError``) whose ``problem`` says what
to write instead and whose ``problem_mark`` is where it stands, so callers report it exactly as
any invalid frontmatter: the page named, its line, the fix; the file is never modified.
"""

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import Node

MAX_DEPTH = 64  # nested mappings and sequences one frontmatter value may have


class _BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases and nesting deeper than ``MAX_DEPTH``."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: object) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise ComposerError(
                None,
                None,
                f"a YAML alias (*{event.anchor}), which this reader refuses because aliases can expand "
                "without bound; write the value out in full instead",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"values nested more than {MAX_DEPTH} levels deep; flatten them",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML by the bounded safe loader; ``yaml.YAMLError`` when it is invalid,
    holds an alias, or nests too deep."""
    loader = _BoundedSafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
