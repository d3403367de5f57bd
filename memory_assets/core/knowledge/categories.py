"""The fact categories: one table, read by the extractor, the personal pages, MEMORY.md and the
staleness defaults.

Each category has one name (the ``[category]`` of a log line, the frontmatter's ``category``),
its page's title (``3_Personal/<Title>.md``), its section heading in MEMORY.md's generated zone,
the ``stale_after`` default its claims get (design §4.9; None: never), and what belongs in it,
as the extraction prompt explains it. ``general`` is the fallback for anything else and is never
asked of the extractor.

Title and heading differ for one category, on purpose: ``personal`` is the page
``3_Personal/Personal.md`` and the MEMORY.md section ``## Profile``, because both are formats real
homes already have (the vault's pages, and the assistant's MEMORY.md, existing-formats §1.3), and
renaming either would leave a user's file beside a new one.

The table's order is the order MEMORY.md lists its sections in. Older notes and pages spell some
categories differently (``identity``, plurals, MEMORY.md's section title ``Profile``):
``ALIASES`` maps them, and ``normalise_category`` reads any of them.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    name: str
    title: str  # the page's title and file name under 3_Personal/
    stale_after_days: int | None
    meaning: str | None  # None: not an extraction category (the fallback)
    heading: str = ""  # MEMORY.md's section heading; empty: the title

    @property
    def memory_md_heading(self) -> str:
        return self.heading or self.title


CATEGORIES: tuple[Category, ...] = (
    Category(
        "personal",
        "Personal",
        None,
        "who the user is: name, age, home, work, family, friends, health",
        "Profile",
    ),
    Category(
        "preference", "Preferences", 365, "likes, dislikes, and how the user wants things done or answered"
    ),
    Category("goal", "Goals", 91, "plans, projects, ambitions and their deadlines"),
    Category(
        "technical", "Technical", 182, "languages, tools, systems, setups and skills the user works with"
    ),
    Category(
        "context", "Context", 21, "the user's current situation or circumstances that will matter for a while"
    ),
    Category("interaction", "Interaction", 21, "how the user likes to work with the assistant"),
    Category("general", "General", 91, None),
)
BY_NAME = {c.name: c for c in CATEGORIES}
GENERAL = BY_NAME["general"]
# What the extractor may assign (every category but the fallback), in the table's order.
EXTRACTED = tuple(c.name for c in CATEGORIES if c.meaning is not None)
ALIASES = {
    "identity": "personal",
    "profile": "personal",
    "preferences": "preference",
    "goals": "goal",
}


def category_named(text: str | None) -> str | None:
    """The category ``text`` spells (its name, its title, or an alias, in any case), or None."""
    value = (text or "").strip().lower()
    value = ALIASES.get(value, value)
    if value in BY_NAME:
        return value
    return next((c.name for c in CATEGORIES if c.title.lower() == value), None)


def normalise_category(category: str | None) -> str:
    """A category's name from any spelling of it; ``general`` for anything else."""
    return category_named(category) or GENERAL.name


def title_of(category: str | None) -> str:
    """The page title and MEMORY.md section heading of a category (``general``'s for anything else)."""
    return BY_NAME[normalise_category(category)].title
