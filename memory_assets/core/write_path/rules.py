"""The deterministic rule-based extractor: the embedded default, with no model and no network.

``RuleExtractor`` reads only what the *user* said (``turn.user``; ``turn.assistant`` is never a
source of facts) and turns first-person statements into one-sentence, third-person facts::

    "I moved to Berlin in 2024 and my sister Ana is a nurse in Porto."
    -> [personal] Moved to Berlin in 2024.
    -> [personal] Has a sister, Ana, who is a nurse in Porto.

How it works, in order:

1. **Prepare.** Control characters and lone surrogates become spaces; only the first
   ``MAX_SCAN_CHARS`` characters are scanned (a longer message is cut, with a warning), and fenced
   code blocks and ``>`` quoted lines are dropped (pasted material is not the user speaking).
   Quoted strings, inline code, URLs, e-mail addresses and paths are *masked* so no later step
   can alter them; they are restored verbatim in the facts.
2. **Split** into sentences (``. ! ? ;``, line breaks, dashes), cut a trailing question or request
   off a statement ("I'm vegetarian, can you suggest a recipe?"), and split on " and ", " but "
   and ", I ..." only where both sides are statements on their own (an elided subject counts:
   "I live in Lisbon and work as a nurse").
3. **Gate.** Questions, hypotheticals ("if I lived in...", "imagine I'm..."), instructions and
   requests to the assistant ("write me a poem", "I want you to...") yield nothing. An instruction
   that sets a lasting behaviour ("always answer in German", "don't use emojis when you talk to
   me") is kept as an ``interaction`` fact.
4. **Rewrite** each clause with the first matching rule of ``RULES``: a table of anchored
   patterns, each with a small rewrite function. A rule rewrites only the head of the clause (the
   subject and its verb: "I live" -> "Lives", "My sister Ana is" -> "Has a sister, Ana, who is");
   the rest of the clause is kept as written, with first-person pronouns turned into third-person
   ones (my -> their, me -> them). So every specific the user gave (numbers, dates, times, names,
   quoted strings, paths, URLs, versions) reaches the fact verbatim.

Every rule needs a first-person anchor (I, my, we, our, me), so a statement about someone else
with no link to the user ("Ana lives in Lisbon") yields nothing. ``known`` facts are ignored:
the rules do not try to recognise repeats; the classifier downstream compares each fact with
what memory holds and records a plain repeat as a confirmation (docs/design.md §5.6).

Deterministic: the same turn always gives the same facts, in the order stated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory_assets.core.write_path.extraction import ExtractedFact, Extraction, Turn

MAX_SCAN_CHARS = 8000  # only the start of a longer message is scanned (a warning says so)
MAX_FACTS = 24  # facts from one turn at most
MAX_CLAUSE_CHARS = 400  # a longer "clause" is pasted prose, not a statement; skipped
MAX_SENTENCE_CHARS = 1200  # a longer run-on "sentence" is skipped whole (pasted text, not a statement)
MAX_FACT_CHARS = 320  # one sentence; a longer rewrite is not emitted

IMPORTANT = 0.8  # identity, family, health, hard constraints, and anything the user asks to remember
USEFUL = 0.6

# ---------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    """The set of the space-separated words of ``text``."""
    return frozenset(text.split())


def _alt(words: Sequence[str]) -> str:
    """A regex alternation of ``words``, longest first (so "best friend" wins over "friend")."""
    return "(?:" + "|".join(re.escape(w) for w in sorted(set(words), key=lambda w: (-len(w), w))) + ")"


RELATIONS = (
    "best friend", "close friend", "friend", "girlfriend", "boyfriend", "fiancée", "fiancé", "fiance",
    "fiancee", "grandmother", "grandfather", "grandparents", "grandma", "grandpa", "granny",
    "granddaughter", "grandson", "grandkids", "grandchildren", "mother-in-law", "father-in-law",
    "sister-in-law", "brother-in-law", "in-laws", "stepmother", "stepfather", "stepmom", "stepmum",
    "stepdad", "stepson", "stepdaughter", "half-sister", "half-brother", "twin sister", "twin brother",
    "twin", "sister", "sisters", "brother", "brothers", "siblings", "mother", "father", "mom", "mum",
    "dad", "parents", "wife", "husband", "spouse", "partner", "son", "sons", "daughter", "daughters",
    "kids", "kid", "children", "child", "baby", "toddler", "cousin", "cousins", "aunt", "auntie",
    "uncle", "niece", "nephew", "roommate", "flatmate", "housemate", "neighbour", "neighbor",
    "colleague", "coworker", "co-worker", "boss", "manager", "mentor", "landlord", "landlady",
    "therapist", "family",
)  # fmt: skip
PETS = (
    "dog", "dogs", "cat", "cats", "puppy", "kitten", "parrot", "rabbit", "bunny", "hamster",
    "guinea pig", "tortoise", "turtle", "horse", "pony", "fish", "goldfish", "snake", "lizard",
    "gecko", "ferret", "budgie", "cockatiel", "chickens", "golden retriever", "labrador", "retriever",
    "border collie", "collie", "beagle", "pug", "poodle", "dachshund", "husky", "german shepherd",
    "corgi", "terrier", "spaniel", "bulldog", "greyhound", "whippet", "pet",
)  # fmt: skip
REL_MODIFIERS = r"(?:(?:older|younger|little|big|elder|eldest|oldest|youngest|baby|late|ex-|ex )\s*)?"
REL_RE = REL_MODIFIERS + _alt(RELATIONS + PETS)

NATIONALITIES = (
    "American", "Argentinian", "Argentine", "Australian", "Austrian", "Bangladeshi", "Belgian",
    "Bolivian", "Brazilian", "British", "Bulgarian", "Cameroonian", "Canadian", "Chilean", "Chinese",
    "Colombian", "Croatian", "Cuban", "Czech", "Danish", "Dutch", "Ecuadorian", "Egyptian", "English",
    "Estonian", "Ethiopian", "Filipino", "Filipina", "Finnish", "French", "German", "Ghanaian",
    "Greek", "Guatemalan", "Hungarian", "Icelandic", "Indian", "Indonesian", "Iranian", "Iraqi",
    "Irish", "Israeli", "Italian", "Jamaican", "Japanese", "Jordanian", "Kenyan", "Korean",
    "Latvian", "Lebanese", "Lithuanian", "Malaysian", "Maltese", "Mexican", "Moroccan", "Nepali",
    "Nigerian", "Norwegian", "Pakistani", "Palestinian", "Peruvian", "Polish", "Portuguese",
    "Romanian", "Russian", "Scottish", "Senegalese", "Serbian", "Singaporean", "Slovak", "Slovenian",
    "South African", "Spanish", "Sri Lankan", "Swedish", "Swiss", "Syrian", "Taiwanese", "Thai",
    "Tunisian", "Turkish", "Ugandan", "Ukrainian", "Uruguayan", "Venezuelan", "Vietnamese", "Welsh",
    "Zimbabwean", "New Zealander", "Kiwi", "Catalan", "Basque", "Galician", "Bavarian",
)  # fmt: skip
NATIONALITY_RE = _alt(NATIONALITIES)
_NATIONALITIES_LOWER = frozenset(n.lower() for n in NATIONALITIES)

# "I'm <state>": states of a person worth remembering -> (category, tag, importance)
STATES: dict[str, tuple[str, str, float]] = {
    **{
        w: ("personal", "diet", IMPORTANT)
        for w in (
            "vegetarian", "vegan", "pescatarian", "gluten-free", "lactose intolerant", "lactose-intolerant",
            "diabetic", "celiac", "coeliac", "teetotal", "teetotaler", "sober", "kosher", "halal",
            "allergic", "intolerant",
        )
    },
    **{
        w: ("personal", "health", IMPORTANT)
        for w in (
            "pregnant", "colorblind", "colourblind", "color blind", "colour blind", "deaf", "blind",
            "hard of hearing", "autistic", "dyslexic", "epileptic", "asthmatic", "disabled",
            "immunocompromised", "short-sighted", "near-sighted", "long-sighted", "diagnosed",
        )
    },
    **{
        w: ("personal", "family", IMPORTANT)
        for w in ("single", "married", "divorced", "engaged", "widowed", "separated", "a widow", "a widower")
    },
    **{
        w: ("personal", "identity", IMPORTANT)
        for w in ("left-handed", "right-handed", "ambidextrous", "bilingual", "trilingual", "an only child")
    },
    **{
        w: ("personal", "work", USEFUL)
        for w in ("retired", "unemployed", "self-employed", "freelance", "freelancing", "employed", "semi-retired")
    },
    **{w: ("context", "situation", USEFUL) for w in ("sick", "ill", "unwell", "injured", "jet-lagged", "on call")},
}  # fmt: skip
STATE_RE = _alt(tuple(STATES))

TECH_TERMS = (
    "python", "rust", "golang", "typescript", "javascript", "java", "kotlin", "c++", "c#", "elixir",
    "erlang", "ruby", "haskell", "scala", "php", "perl", "julia", "clojure", "ocaml", "lua", "dart",
    "flutter", "sql", "postgresql", "postgres", "mysql", "mariadb", "sqlite", "mongodb", "redis",
    "kafka", "rabbitmq", "docker", "podman", "kubernetes", "k8s", "terraform", "ansible", "helm",
    "django", "flask", "fastapi", "rails", "laravel", "spring", "react", "react native", "vue",
    "angular", "svelte", "next.js", "node", "node.js", "nodejs", "deno", "bun", "linux", "ubuntu",
    "debian", "fedora", "arch linux", "nixos", "centos", "macos", "windows", "wsl", "freebsd", "vim",
    "neovim", "emacs", "vs code", "vscode", "intellij", "pycharm", "helix", "sublime text", "xcode",
    "git", "github", "gitlab", "bitbucket", "aws", "gcp", "azure", "pandas", "numpy", "pytorch",
    "tensorflow", "airflow", "dagster", "dbt", "spark", "excel", "notion", "obsidian", "figma",
    "blender", "home assistant", "raspberry pi", "arduino", "nas", "vps", "hetzner", "synology",
    "nginx", "bash", "zsh", "fish shell", "powershell", "graphql", "supabase", "firebase", "vercel",
    "netlify", "heroku", "jupyter", "latex", "unity", "unreal", "godot", "tailwind", "css", "html",
    "webpack", "vite", "npm", "pip", "conda", "poetry", "cargo", "jenkins", "github actions",
    "prometheus", "grafana", "elasticsearch", "lancedb", "copilot", "proxmox", "truenas", "tmux",
    "dotfiles", "self-host", "homelab", "swift", "swiftui",
)  # fmt: skip
_TECH_RE = re.compile(r"(?<![\w+#.])" + _alt(TECH_TERMS) + r"(?![\w+#])|(?<![\w.])Go(?![\w])", re.IGNORECASE)

# Words that, first in an object, mean the clause is not about the user's life ("I love it").
DEICTIC = _words(
    "it it's this that these those so too you your yours what how why when where which who "
    "something anything nothing everything someone anyone one more here there them him her "
    "that's this's"
)

# Nouns that make "I have a ..." conversational rather than a fact ("I have a question").
HAVE_STOP_NOUNS = _words(
    "question questions idea ideas problem problems issue issues doubt doubts minute minutes second "
    "request suggestion suggestions favour favor feeling bug error errors clue thought thoughts "
    "concern concerns confession news point look go update follow-up followup way day moment "
    "sec headache"
)
HAVE_SKIP_WORDS = _words(
    "a an the some another one quick small few little weird stupid silly random follow-up more "
    "couple of lot lots bit no"
)
EVENT_NOUNS = _words(
    "interview appointment meeting exam exams test deadline flight date call presentation conference "
    "wedding party trip holiday vacation surgery operation shift class lecture match game concert "
    "gig performance recital demo hearing checkup check-up viva defence defense"
)
NON_FAMILY = _words(
    "colleague coworker co-worker boss manager mentor landlord landlady therapist neighbour neighbor "
    "roommate flatmate housemate"
)
FAMILY_WORDS = frozenset(w for r in RELATIONS for w in r.split()) - {"family"} - NON_FAMILY
PET_WORDS = frozenset(w for p in PETS for w in p.split())
_HEALTH_RE = re.compile(
    r"allerg|asthma|diabet|adhd|migraine|blood pressure|disease|syndrome|disorder|intoleran|celiac|"
    r"coeliac|tinnitus|\bibs\b|thyroid|dyslexi|surgery|operation|pregnan|medication|insulin|metformin|"
    r"vegan|vegetarian|pescatarian|gluten|lactose|epilep|depress|anxiety|arthritis|cancer|eczema|"
    r"insomnia|injur|fracture|\bbroke\b|diagnos|chronic|autis|\bbad (?:knee|back|hip|shoulder)",
    re.IGNORECASE,
)

# Nouns after "my" that are about the conversation, not the user ("my code crashes").
EPHEMERAL_NOUNS = _words(
    "code script function program query build test tests error output prompt essay question questions "
    "answer message point bad guess pleasure turn mistake fault apologies internet connection battery "
    "understanding opinion thoughts take concern issue problem request screen browser"
)

# Nouns after "my" that decide the fact's category.
MY_NOUN_CATEGORY: tuple[tuple[frozenset[str], str, str, float], ...] = (
    (_words("favourite favorite preference go-to hobby hobbies passion"), "preference", "preference", USEFUL),
    (_words("goal goals plan plans dream resolution aim ambition target"), "goal", "goal", USEFUL),
    (
        _words(
            "exam exams flight appointment interview deadline meeting train trip holiday vacation project "
            "shift wedding surgery operation presentation lease contract visa"
        ),
        "context",
        "schedule",
        USEFUL,
    ),
    (
        _words(
            "laptop computer pc desktop machine editor ide dotfiles config backups backup server servers "
            "stack setup os blog homelab nas router wifi keyboard shell terminal repo repository "
            "database distro"
        ),
        "technical",
        "tech",
        USEFUL,
    ),
    (
        _words(
            "name birthday age nationality language tongue pronouns surname email address phone number "
            "blood type"
        ),
        "personal",
        "identity",
        IMPORTANT,
    ),
    (_words("job employer company salary office team role title"), "personal", "work", USEFUL),
)

ADVERBS = (
    "really", "usually", "always", "never", "often", "sometimes", "mostly", "also", "still", "just",
    "currently", "now", "actually", "generally", "normally", "rarely", "only", "definitely",
    "honestly", "absolutely", "mainly", "primarily", "typically", "occasionally", "regularly",
    "frequently", "seldom", "hardly ever", "basically", "recently", "finally", "already", "kind of",
    "sort of", "pretty much", "totally", "literally", "secretly", "religiously", "strictly",
    "exclusively", "almost always", "almost never", "nearly always", "even", "all", "both", "each",
    "truly", "genuinely", "personally", "officially", "newly",
)  # fmt: skip
ADV_RE = r"(?P<adv>(?:" + _alt(ADVERBS) + r"\s+)*)"

# Base verbs of habits and facts -> (category, tag, importance). Present tense, conjugated.
VERBS: dict[str, tuple[str, str, float]] = {
    **{v: ("personal", "home", USEFUL) for v in ("live", "rent", "split", "commute")},
    **{v: ("personal", "work", USEFUL) for v in ("work", "teach", "study", "manage", "lead", "freelance", "earn")},
    **{v: ("personal", "language", IMPORTANT) for v in ("speak",)},
    **{v: ("personal", "identity", IMPORTANT) for v in ("identify",)},
    **{v: ("technical", "tech", USEFUL) for v in ("use", "code", "program", "deploy", "self-host", "host")},
    **{v: ("personal", "possession", USEFUL) for v in ("own", "drive")},
    **{v: ("personal", "health", USEFUL) for v in ("take", "wear", "sleep", "weigh", "smoke", "vape", "suffer")},
    **{v: ("personal", "diet", USEFUL) for v in ("eat", "drink", "follow")},
    **{
        v: ("personal", "routine", USEFUL)
        for v in (
            "run", "go", "do", "cycle", "bike", "swim", "walk", "hike", "climb", "cook", "bake", "read",
            "wake", "get", "start", "finish", "keep", "write", "know", "meditate", "practise", "practice",
            "train", "lift", "paint", "draw", "knit", "sew", "garden", "fish", "ski", "snowboard", "surf",
            "skate", "dance", "sing", "travel", "visit", "celebrate", "volunteer", "attend", "spend",
            "make", "grow", "raise", "pay", "belong", "play", "collect", "care",
        )
    },
    **{
        v: ("preference", "preference", USEFUL)
        for v in (
            "prefer", "like", "love", "enjoy", "adore", "hate", "dislike", "detest", "loathe", "despise",
            "mind", "listen", "watch", "support", "favour", "favor", "avoid", "miss",
        )
    },
}  # fmt: skip
INTRANSITIVE_OK = _words("smoke vape cycle swim cook bake meditate ski snowboard surf skate dance sing")

# Past forms -> (category, tag, importance). Kept as they are ("I moved" -> "Moved").
PAST_VERBS: dict[str, tuple[str, str, float]] = {
    **{v: ("personal", "home", USEFUL) for v in ("moved", "relocated", "emigrated", "immigrated", "lived", "rented")},
    **{v: ("personal", "identity", IMPORTANT) for v in ("grew", "turned")},
    **{v: ("personal", "possession", USEFUL) for v in ("bought", "sold", "adopted", "inherited")},
    **{v: ("context", "health", IMPORTANT) for v in ("broke", "sprained", "fractured", "tore", "injured")},
    **{
        v: ("personal", "work", USEFUL)
        for v in (
            "started", "joined", "quit", "left", "retired", "graduated", "became", "worked", "founded",
            "launched", "studied", "trained", "learned", "learnt", "changed", "got", "spent", "went",
            "visited", "returned", "wrote", "built", "published", "made", "had", "used", "ran", "won",
            "lost", "finished", "completed", "passed", "failed", "took", "began",
        )
    },
    **{v: ("personal", "family", IMPORTANT) for v in ("married", "divorced", "met", "separated")},
    **{v: ("goal", "goal", USEFUL) for v in ("decided", "signed", "enrolled", "registered", "applied", "committed")},
    **{v: ("technical", "tech", USEFUL) for v in ("switched", "upgraded", "migrated")},
}  # fmt: skip

# Verbs that start an instruction or request to the assistant.
IMPERATIVES = _words(
    "write give tell make fix list rewrite translate explain summarise summarize help show draft "
    "generate convert compare continue try book set remind use create find check read send describe "
    "calculate plan suggest recommend proofread edit review add remove delete update change format "
    "sort search look let's lets go build design draw compose analyse analyze brainstorm outline "
    "name pick choose act pretend play teach walk answer reply respond keep stop start be call "
    "address forget ignore repeat shorten expand simplify clarify elaborate define cite include "
    "avoid put open close run debug refactor improve correct count estimate predict imagine "
    "please pls kindly say talk speak ask mention assume double-check"
)
QUESTION_STARTS = _words(
    "what what's whats where where's when who who's why how how's which whose whom does did is "
    "isn't are aren't am was were can could would should shall will won't has any anything "
    "wanna"
)
HYPOTHETICAL_RE = re.compile(
    r"^(?:if|imagine|suppose|supposing|pretend|hypothetically|assume|assuming|let'?s say|let us say|"
    r"say (?:i|my|we|you|that)|what if|were i|in (?:this|the|a) (?:role-?play|story|scenario|game)|"
    r"for example|e\.g\.|as an example|in a world where|picture this|play the role)\b",
    re.IGNORECASE,
)
_CONDITIONAL_RE = re.compile(
    r"\bI'?d\b(?! (?:like|love|rather|prefer|say|be (?:happy|glad)))|\bI would\b(?! (?:like|love|rather|prefer))",
    re.IGNORECASE,
)

# ---------------------------------------------------------------------------------------------
# Text preparation
# ---------------------------------------------------------------------------------------------

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ue000\ue001\u2028\u2029]")
_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_QUOTED_LINE_RE = re.compile(r"^\s*>.*$", re.MULTILINE)
_MASK_RE = re.compile(
    r"`[^`\n]{1,300}`"  # inline code
    r'|"[^"\n]{1,300}"|“[^”\n]{1,300}”|«[^»\n]{1,300}»'  # double quotes
    r"|(?<![\w'])'[^'\n]{1,300}'(?![\w])"  # single quotes, not apostrophes
    r"|(?:https?://|www\.)[^\s<>\"'`]*[^\s<>\"'`.,;:!?)\]]"  # URLs
    r"|(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail addresses
    r"|(?<![\w/~])(?:~[\w.-]*(?:/[\w.~-]+)*/?|/(?:[\w.~-]+/)+[\w.~-]*|/[A-Za-z][\w.~-]*(?=[\s,.;:!?]|$)"
    r"|[A-Za-z]:\\(?:[\w.~-]+\\?)*)"  # paths
)
_PLACEHOLDER_RE = re.compile("\ue000(\\d+)\ue001")
# (Runs of whitespace are matched from their start only, so a long run costs linear time.)
_SENTENCE_RE = re.compile(
    r"(?<=[.!?…])\s+|\n+|;\s+|(?<!\s)\s+[—–]\s+|(?<!\s)\s+-{1,2}\s+|(?<=[.!?])(?=[A-Z])"
)
_ABBREV_END_RE = re.compile(
    r"\b(?:e\.g|i\.e|etc|vs|dr|mr|mrs|ms|st|approx|no|jr|sr|prof|mt)\.$", re.IGNORECASE
)
_TAIL_QUESTION_RE = re.compile(
    r",\s+(?=(?:can|could|would|will|do|does|did|is|are|what|what's|which|how|where|when|why|who|any|"
    r"should|please|pls|thoughts|ideas|right|ok|okay|thanks|thank)\b)",
    re.IGNORECASE,
)
_PREFIX_RE = re.compile(
    r"^(?:(?:oh|ah|well|so|and|also|anyway|anyways|btw|by the way|fyi|ps|p\.s\.|hey|hi|hello|ok|okay|"
    r"um|uh|hmm|yeah|yes|no|actually|honestly|basically|personally|fun fact|quick note|note|for context|"
    r"for the record|just so you know|just fyi|as you know|as i said|like i said|just to let you know|"
    r"for reference|in case it matters|(?:please )?(?:remember|note|know|keep in mind|bear in mind|"
    r"don't forget|do not forget|never forget)(?: that)?|i should mention(?: that)?|i forgot to mention"
    r"(?: that)?|i should say(?: that)?|i want you to know(?: that)?|just remember(?: that)?)"
    r"(?:\s*[,:;!.-]+\s*|\s+))+",
    re.IGNORECASE,
)
# "Remember that ...", "Quick note: please keep in mind ...": the user asks for the fact to be kept.
_REMEMBER_RE = re.compile(
    r"(?:[^,:;]{0,40}[,:;]\s*)?(?:please |pls |just )?(?:remember|keep in mind|bear in mind|note|don't forget|"
    r"do not forget|never forget)\b",
    re.IGNORECASE,
)
_FILLER_END_RE = re.compile(
    r"(?<![\s,])(?:[\s,]+(?:btw|by the way|lol|haha|hehe|lmao|fyi|tbh|if that matters|if that helps|if it matters|"
    r"if you need to know|just so you know|honestly|though|in case that matters|for what it's worth|"
    r"fwiw|:\)|:-\)|:d|;\)|xd))+\s*$",
    re.IGNORECASE,
)
_CONJ_RE = re.compile(
    r"(?<![\s,]),?\s+(?:and|but|and also|but also)\s+|,\s+(?=(?:I|my|we|our)\b)", re.IGNORECASE
)
_LEAD_RE = re.compile(
    r"^(?P<lead>(?:this|next|last|every) (?:year|month|week|summer|winter|spring|autumn|fall|weekend|"
    r"semester|term|morning|day)|right now|currently|at the moment|these days|nowadays|lately|recently|"
    r"today|tomorrow|tonight|on weekends|at weekends|in the mornings?|in the evenings?|at work|at home|"
    r"for work|in general|in (?:19|20)\d\d|since (?:19|20)\d\d|[a-z]+-wise|as of (?:now|today)|"
    r"for now|for the moment|these past few (?:weeks|months|years))(?:,\s*|\s+)(?=(?:I|I'm|my|we|we're|our)\b)",
    re.IGNORECASE,
)
_DROP_LEAD_RE = re.compile(
    r"^(?:honestly|actually|basically|personally|well|so|also|and|but|anyway|ok so|okay so)(?:,\s*|\s+)(?=(?:I|my|we|our)\b)",
    re.IGNORECASE,
)
_GERUND_START_RE = re.compile(
    r"^(?=(?:hoping|planning|trying|working|moving|going|saving|learning|starting|preparing|aiming|"
    r"studying|training|living|based|off to|currently)\b)",
    re.IGNORECASE,
)

# (pattern, replacement) applied in order, outside masked spans, to give the rules one spelling.
_CANON: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"[’‘`´]", "'"),
        (r"(?<![\w'])i(?![\w])", "I"),
        (r"\bim\b", "I'm"),
        (r"\bive\b", "I've"),
        (r"\bI am\b", "I'm"),
        (r"\bI've got\b", "I have"),
        (r"\bI have got\b", "I have"),
        (r"\bI've\b", "I have"),
        (r"\bI would\b", "I'd"),
        (r"\bI will\b", "I'll"),
        (r"\bwanna\b", "want to"),
        (r"\bgonna\b", "going to"),
        (r"\bgotta\b", "have to"),
        (r"\bdon'?t\b", "do not"),
        (r"\bdoesn'?t\b", "does not"),
        (r"\bdidn'?t\b", "did not"),
        (r"\bcan'?t\b", "cannot"),
        (r"\bcan not\b", "cannot"),
        (r"\bwon'?t\b", "will not"),
        (r"\bisn'?t\b", "is not"),
        (r"\baren'?t\b", "are not"),
        (r"\bhaven'?t\b", "have not"),
        (r"\bhasn'?t\b", "has not"),
        (r"\bwasn'?t\b", "was not"),
        (r"\bname's\b", "name is"),
        (r"\bfavou?rite's\b", r"\g<0>"),
        (r"^we're\b", "I'm"),
        (r"^we are\b", "I'm"),
        (r"^we've got\b", "I have"),
        (r"^we've\b", "I have"),
        (r"^we have got\b", "I have"),
        (r"^we\b", "I"),
        (r"^our\b", "my"),
        (r"^me and my (\w+)", r"my \1 and I"),
    )
)

_THIRD: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"\bI'm\b", "they're"),
        (r"\bI have\b", "they have"),
        (r"\bI'd\b", "they'd"),
        (r"\bI'll\b", "they'll"),
        (r"\bI was\b", "they were"),
        (r"\bI\b", "they"),
        (r"\bmyself\b", "themselves"),
        (r"\bmy\b", "their"),
        (r"\bmine\b", "theirs"),
        (r"\bme\b", "them"),
        (r"\bours\b", "theirs"),
        (r"\bour\b", "their"),
        (r"\bwe're\b", "they're"),
        (r"\bwe\b", "they"),
        (r"\bus\b", "them"),
    )
)
_ASSISTANT: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\byourself\b", re.IGNORECASE), "itself"),
    (re.compile(r"\byour\b", re.IGNORECASE), "its"),
    (re.compile(r"\byou(?:'re| are)\b", re.IGNORECASE), "it is"),
    (re.compile(r"\byou(?:'ve| have)\b", re.IGNORECASE), "it has"),
    (re.compile(r"\byou\b", re.IGNORECASE), "it"),
)
# "you talk" -> "you talks" before "you" becomes "it" (modals and past forms are left alone)
_YOU_VERB_RE = re.compile(
    r"\byou (?!(?:can|could|will|would|should|must|may|might|did|do not|never|always|also|just|all|are|have)\b)"
    r"([a-z]+)\b",
    re.IGNORECASE,
)


def _sanitise(text: object) -> str:
    """A str with no control characters and no lone surrogates (both become spaces)."""
    if not isinstance(text, str):
        return ""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\ufffd", " ")
    return _CONTROL_RE.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " "))


class _Masks:
    """Quoted strings, code, URLs, e-mails and paths, set aside so nothing rewrites them."""

    def __init__(self) -> None:
        self.spans: list[str] = []

    def mask(self, text: str) -> str:
        def put(m: re.Match[str]) -> str:
            span, after = m.group(0), ""
            if span[:1] not in "\"'`“«":  # a path's trailing full stop ends the sentence, not the path
                after = span[len(span.rstrip(".")) :]
                span = span[: len(span) - len(after)]
            self.spans.append(span)
            return f"\ue000{len(self.spans) - 1}\ue001{after}"

        return _MASK_RE.sub(put, text)

    def restore(self, text: str) -> str:
        return _PLACEHOLDER_RE.sub(lambda m: self.spans[int(m.group(1))], text)

    def has_path(self, text: str) -> bool:
        return any(
            self.spans[int(i)][:1] in ("/", "~") or re.match(r"[A-Za-z]:\\", self.spans[int(i)])
            for i in _PLACEHOLDER_RE.findall(text)
        )


def _canonical(text: str) -> str:
    for pattern, repl in _CANON:
        text = pattern.sub(repl, text)
    return text


def _third(text: str, assistant: bool = False) -> str:
    """First-person words in ``text`` as third-person ones (my -> their); with ``assistant``,
    second-person words as the assistant's (your -> its). Masked spans are untouched."""
    for pattern, repl in _THIRD:
        text = pattern.sub(repl, text)
    if assistant:
        text = _YOU_VERB_RE.sub(
            lambda m: "you " + (m.group(1) if m.group(1).endswith("ed") else _conjugate(m.group(1))), text
        )
        for pattern, repl in _ASSISTANT:
            text = pattern.sub(repl, text)
    return text


def _conjugate(verb: str) -> str:
    """The third-person singular of a base verb (live -> lives, go -> goes, study -> studies)."""
    low = verb.lower()
    irregular = {"have": "has", "do": "does", "go": "goes", "be": "is"}
    if low in irregular:
        return irregular[low]
    if "-" in low:  # self-host -> self-hosts
        head, _, last = verb.rpartition("-")
        return head + "-" + _conjugate(last)
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _first_word(text: str) -> str:
    m = re.match(r"\s*([\w'-]+)", text)
    return m.group(1).lower() if m else ""


def _is_vague(rest: str) -> bool:
    """True for an object that points at the conversation rather than the world ("it", "this");
    "everything with Docker" is specific enough, a bare "everything" is not."""
    first = _first_word(rest)
    if first in ("everything", "something", "anything", "nothing", "all") and len(rest.split()) >= 3:
        return False
    return not rest.strip() or first in DEICTIC


def _mentions_tech(text: str) -> bool:
    return bool(_TECH_RE.search(text))


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    """A fact before tags: its sentence (still masked), category, topic tag and importance."""

    content: str
    category: str
    tag: str
    importance: float = USEFUL


RuleFn = Callable[[re.Match[str]], Draft | None]


def _d(content: str, category: str, tag: str, importance: float = USEFUL) -> Draft:
    return Draft(content, category, tag, importance)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _adv(m: re.Match[str], group: str = "adv") -> str:
    return (m.groupdict().get(group) or "").lower()


# -- how the user wants the assistant to behave ------------------------------------------------

_PERSIST_LEAD = r"(?P<lead>(?:please |pls |and )?(?:from now on|in (?:the )?future|going forward|from here on(?: out)?|by default|for all (?:future )?(?:chats|conversations|answers))),?\s+"
_INSTRUCT_VERB = (
    r"(?:answer|reply|respond|use|keep|give|write|explain|be|call|address|cite|include|add|avoid|stop|"
    r"talk|speak|show|format|list|ask|remind|tell|check|suggest|recommend|mention|assume|put|make|start|"
    r"end|sign|refer|translate|double-check|summari[sz]e|correct|spell|stick|skip|leave|open|treat|"
    r"provide|send|focus|limit|avoid|quote|link|write|respect|warn|let|go)"
)


def _instruction_body(body: str) -> str:
    """An instruction's words from the assistant's side ("keep your answers short" -> "keep its...")."""
    body = body.rstrip(" ,")
    return _third(body[:1].lower() + body[1:], assistant=True)


def _persist_lead(m: re.Match[str]) -> Draft | None:
    body = m.group("body")
    lead = m.group("lead").lower().removeprefix("please ").removeprefix("pls ").removeprefix("and ")
    neg = re.match(r"(?:please )?(?:do not|never)\s+(?P<b>.+)$", body, re.IGNORECASE)
    if neg and body.lower().removeprefix("please ").startswith("do not"):
        return _d(
            f"Does not want the assistant to {_instruction_body(neg.group('b'))} {lead}",
            "interaction",
            "assistant",
        )
    return _d(f"Wants the assistant to {_instruction_body(body)} {lead}", "interaction", "assistant")


def _persist_adverb(m: re.Match[str]) -> Draft | None:
    adv = m.group("padv").lower()
    return _d(
        f"Wants the assistant to {adv} {_instruction_body(m.group('body'))}", "interaction", "assistant"
    )


def _negative_instruction(m: re.Match[str]) -> Draft | None:
    return _d(
        f"Does not want the assistant to {_instruction_body(m.group('body'))}", "interaction", "assistant"
    )


def _stop_instruction(m: re.Match[str]) -> Draft | None:
    return _d(f"Wants the assistant to stop {_instruction_body(m.group('body'))}", "interaction", "assistant")


def _when_instruction(m: re.Match[str]) -> Draft | None:
    cond = _third(m.group("cond"))
    when = m.group("when").lower()
    return _d(
        f"Wants the assistant to {_instruction_body(m.group('body'))} {when} they {cond}",
        "interaction",
        "assistant",
    )


def _be_with_me(m: re.Match[str]) -> Draft | None:
    return _d(f"Wants the assistant to {_instruction_body(m.group('body'))}", "interaction", "assistant")


def _call_me(m: re.Match[str]) -> Draft | None:
    name = m.group("name").strip()
    if _is_vague(name) or len(name.split()) > 4:
        return None
    return _d(f"Wants to be called {name}", "interaction", "name", IMPORTANT)


def _like_when_you(m: re.Match[str]) -> Draft | None:
    verb = _conjugate(m.group("verb"))
    clause = _third("you " + m.group("rest"), assistant=True).removeprefix("it ")
    return _d(f"{_cap(verb)} it when the assistant {clause}", "interaction", "assistant")


def _want_your(m: re.Match[str]) -> Draft | None:
    verb = {"want": "Wants", "need": "Needs", "like": "Likes", "prefer": "Prefers"}[m.group("verb").lower()]
    return _d(f"{verb} the assistant's {_third(m.group('rest'), assistant=True)}", "interaction", "assistant")


# -- "my ..." -----------------------------------------------------------------------------------


def _my_name(m: re.Match[str]) -> Draft | None:
    name = m.group("name").strip()
    if _is_vague(name) or len(name.split()) > 5:
        return None
    return _d(f"Their name is {name}", "personal", "identity", IMPORTANT)


def _relation_tag(rel: str) -> tuple[str, float]:
    """A relation's tag and importance: family is important; pets and people at work are useful."""
    last = rel.split()[-1].lower()
    if last in PET_WORDS:
        return "pet", USEFUL
    if last in NON_FAMILY:
        return "people", USEFUL
    return "family", IMPORTANT


def _relative_name(m: re.Match[str]) -> Draft | None:
    rel, name = m.group("rel"), m.group("name").strip()
    if _is_vague(name) or len(name.split()) > 5:
        return None
    article = "an" if rel[:1].lower() in "aeiou" else "a"
    tag, importance = _relation_tag(rel)
    return _d(f"Has {article} {rel} named {name}", "personal", tag, importance)


def _relative_and_i(m: re.Match[str]) -> Draft | None:
    return _d(f"They and their {m.group('rel')} {_third(m.group('vp'))}", "personal", "family", IMPORTANT)


def _relative(m: re.Match[str]) -> Draft | None:
    rel, name, vp = m.group("rel"), m.group("name"), m.group("vp")
    if vp.rstrip().endswith("?"):
        return None
    tag, importance = _relation_tag(rel)
    vp = _third(vp)
    if name:
        article = "an" if rel[:1].lower() in "aeiou" else "a"
        return _d(f"Has {article} {rel}, {name}, who {vp}", "personal", tag, importance)
    return _d(f"Their {rel} {vp}", "personal", tag, importance)


def _noun_category(np: str) -> tuple[str, str, float] | None:
    words = set(re.findall(r"[\w-]+", np.lower()))
    if words & EPHEMERAL_NOUNS and not words & {"wifi", "email"}:
        return None
    for nouns, category, tag, importance in MY_NOUN_CATEGORY:
        if words & nouns:
            return category, tag, importance
    if words & FAMILY_WORDS:
        return "personal", "family", IMPORTANT
    return "personal", "personal", USEFUL


def _my_thing(m: re.Match[str]) -> Draft | None:
    np, verb, rest = m.group("np"), m.group("verb"), m.group("rest")
    found = _noun_category(np)
    if found is None or _is_vague(rest):
        return None
    category, tag, importance = found
    text = f"Their {np} {verb.lower()} {_third(rest.strip())}"
    if (category, tag) == ("personal", "personal") and _mentions_tech(text):
        category, tag = "technical", "tech"
    return _d(text, category, tag, importance)


def _is_my(m: re.Match[str]) -> Draft | None:
    value, np = m.group("value").strip(), m.group("np").strip()
    if (
        len(value.split()) > 6
        or _first_word(value) in DEICTIC | QUESTION_STARTS
        or re.search(r"\b(?:I|my)\b", value)
    ):
        return None
    found = _noun_category(np)
    if found is None:
        return None
    category, tag, importance = found
    return _d(f"Their {_third(np)} is {value}", category, tag, importance)


def _home_is(m: re.Match[str]) -> Draft | None:
    return _d(f"Home is {_third(m.group('rest'))}", "personal", "home")


# -- "I'm ..." ----------------------------------------------------------------------------------


_NOT_NAMES = _words(
    "sorry fine good great ok okay back here ready done not just so afraid sure glad happy tired "
    "bored busy free home new fluent native originally from in on at a an the also still currently "
    "always never really"
)


def _im_name(m: re.Match[str]) -> Draft | None:
    name = m.group("name")
    low = name.lower()
    if low in _NOT_NAMES or low in STATES or low in DEICTIC or low in _NATIONALITIES_LOWER:
        return None
    return _d(f"Their name is {name}", "personal", "identity", IMPORTANT)


def _im_age(m: re.Match[str]) -> Draft | None:
    age = int(m.group("age"))
    if not 3 <= age <= 120:
        return None
    return _d(
        f"Is {m.group('age')} years old{_third(m.group('rest') or '')}", "personal", "identity", IMPORTANT
    )


def _im_tall(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {m.group('h')} tall{_third(m.group('rest'))}", "personal", "health", IMPORTANT)


def _im_nationality(m: re.Match[str]) -> Draft | None:
    qualifier = m.group("q") or ""
    return _d(f"Is {qualifier}{m.group('nat')}{_third(m.group('rest'))}", "personal", "identity", IMPORTANT)


def _im_language(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {_third(m.group('rest'))}", "personal", "language", IMPORTANT)


def _im_from(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {_adv(m)}{m.group('how')} {_third(m.group('rest'))}", "personal", "identity", IMPORTANT)


def _im_based(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {_adv(m)}{m.group('how')} {_third(m.group('rest'))}", "personal", "home")


def _im_allergic(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {_adv(m)}allergic to {_third(m.group('rest'))}", "personal", "health", IMPORTANT)


def _im_state(m: re.Match[str]) -> Draft | None:
    state = m.group("state")
    category, tag, importance = STATES[state.lower()]
    neg = "not " if m.group("neg") else ""
    return _d(f"Is {neg}{_adv(m)}{state}{_third(m.group('rest'))}", category, tag, importance)


def _im_fan(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    return _d(
        f"Is {m.group('neg') or ''}{_adv(m)}{m.group('what')} {_third(rest)}", "preference", "preference"
    )


def _im_person(m: re.Match[str]) -> Draft | None:
    return _d(f"Is {m.group('what')}{_third(m.group('rest'))}", "preference", "preference")


def _im_skill(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    text = f"Is {m.group('neg') or ''}{_adv(m)}{m.group('what')} {_third(rest)}"
    return _d(text, "technical" if _mentions_tech(text) else "personal", "skill")


def _im_on(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    low = rest.lower()
    text = f"Is {_adv(m)}on {_third(rest)}"
    if re.match(r"(?:a |an )?[\w-]*\s*diet\b|(?:a |an )?(?:[\w-]+ )?diet\b|medication|meds\b", low):
        return _d(text, "personal", "diet", IMPORTANT)
    if re.match(
        r"(?:holiday|holidays|vacation|leave|sick leave|parental leave|maternity leave|paternity leave|"
        r"a break|break|a trip|a business trip|sabbatical|call|the road|tour)\b",
        low,
    ):
        return _d(text, "context", "schedule")
    if _mentions_tech(rest):
        return _d(text, "technical", "tech")
    return None


def _im_place(m: re.Match[str]) -> Draft | None:
    prep, rest = m.group("prep").lower(), m.group("rest")
    if _is_vague(rest) or rest.strip().lower() in {"the chat", "my phone", "a meeting", "work"}:
        return None
    text = f"Is {_adv(m)}{prep} {_third(rest)}"
    if re.match(r"(?:my|their) (?:\w+ )?(?:year|semester|term)\b", rest, re.IGNORECASE):
        return _d(text, "personal", "study")
    return _d(text, "context", "situation")


# -ing verbs that say nothing about the user's life ("I'm wondering whether...").
_PROGRESSIVE_SKIP = re.compile(
    r"(?:kidding|joking|wondering|thinking|asking|looking for|looking at|curious|getting(?! married| divorced)|"
    r"having (?:trouble|issues|a problem|problems|an issue|a hard time|difficulty)|doing|feeling|waiting|"
    r"talking|chatting|typing|writing to you|sorry|trying to (?:understand|figure|find|get|work out|remember|"
    r"decide|see|fix|solve|make sense)|going to (?:ask|tell|say|explain|paste|share|send|give|show|need|try|"
    r"be honest|be back|go now|have to|leave|sleep|bed)|going now|leaving|reading this|reading your|"
    r"saying|telling|asking|trying this|trying it|testing|messing|just)\b",
    re.IGNORECASE,
)
_GOAL_PROGRESSIVE = re.compile(
    r"(?:learning|planning|saving|trying|hoping|aiming|going|moving|getting married|getting divorced|"
    r"starting|training for|applying|looking to|thinking of|thinking about (?:moving|quitting|starting|buying)|"
    r"considering|taking up|switching to)\b",
    re.IGNORECASE,
)


def _im_progressive(m: re.Match[str]) -> Draft | None:
    phrase = m.group("verb") + m.group("rest")
    if _PROGRESSIVE_SKIP.match(phrase) or _is_vague(m.group("rest")):
        return None
    if re.match(r"\w+ (?:to )?(?:something|anything|it|this|that)\b", phrase, re.IGNORECASE):
        return None
    text = f"Is {_adv(m)}{_third(phrase)}"
    verb = m.group("verb").lower()
    if _GOAL_PROGRESSIVE.match(phrase):
        return _d(text, "goal", "goal")
    if verb in ("studying", "living", "teaching", "dating", "raising", "expecting"):
        return _d(text, "personal", "personal", IMPORTANT if verb in ("dating", "expecting") else USEFUL)
    if verb == "working" and not re.match(
        r"working (?:on|from|remotely|late|overtime)\b", phrase, re.IGNORECASE
    ):
        return _d(text, "personal", "work")
    if verb in ("using", "running", "coding", "programming", "deploying", "hosting") and _mentions_tech(
        phrase
    ):
        return _d(text, "technical", "tech")
    return _d(text, "context", "situation")


def _im_a(m: re.Match[str]) -> Draft | None:
    noun = m.group("noun")
    if _first_word(noun) in {
        "bit",
        "little",
        "lot",
        "fan",
        "big",
        "huge",
        "total",
        "complete",
        "real",
        "tad",
    }:
        return None
    if re.match(r"(?:bit|little) ", noun, re.IGNORECASE):
        return None
    text = f"Is {_adv(m)}{m.group('art').lower()} {_third(noun)}"
    if re.search(r"\bnative\b.*\bspeaker\b", noun, re.IGNORECASE):
        return _d(text, "personal", "language", IMPORTANT)
    if re.match(NATIONALITY_RE + r"\b", noun, re.IGNORECASE):
        return _d(text, "personal", "identity", IMPORTANT)
    if re.search(r"\b(?:person|owl|bird)\b", noun, re.IGNORECASE):
        return _d(text, "preference", "preference")
    if re.search(
        r"\b(?:introvert|extrovert|ambivert|only child|twin|mom|mum|dad|mother|father|parent|grandparent)\b",
        noun,
        re.IGNORECASE,
    ):
        return _d(text, "personal", "identity", IMPORTANT)
    return _d(text, "personal", "work")


# -- "I have ..." -------------------------------------------------------------------------------

_PP_SKIP = _words(
    "heard seen told said asked wondered noticed tried thought read meant wanted been_thinking forgotten "
    "forgot got_a_question mentioned explained shared sent pasted attached written_to"
)


def _been_base(rest: str) -> tuple[str, str, float]:
    """Category, tag and importance for "I have been <rest>" from what follows "been"."""
    m = re.match(r"\s*(\w+)ing\b", rest)
    if m:
        stem = m.group(1).lower()
        for base in (stem, stem + "e", stem[:-1]):
            if base in VERBS:
                return VERBS[base]
    if re.match(r"\s*an? ", rest):
        return "personal", "work", USEFUL
    return "personal", "personal", USEFUL


def _have_perfect(m: re.Match[str]) -> Draft | None:
    pp, rest = m.group("pp").lower(), m.group("rest")
    if pp in _PP_SKIP:
        return None
    if pp == "been" and _PROGRESSIVE_SKIP.match(rest.strip()):
        return None
    if pp != "been" and _is_vague(rest) and not m.group("adv"):
        return None
    text = f"Has {_adv(m)}{m.group('pp')}{_third(rest)}"
    category, tag, importance = (
        _been_base(rest) if pp == "been" else PAST_VERBS.get(pp, ("personal", "personal", USEFUL))
    )
    if pp == "decided":
        category, tag = "goal", "goal"
    elif category != "goal" and _mentions_tech(text):
        category, tag = "technical", "tech"
    elif re.search(r"\b(?:married|together|divorced|engaged)\b", text, re.IGNORECASE):
        category, tag, importance = "personal", "family", IMPORTANT
    return _d(text, category, tag, importance)


_TIME_MARKER = re.compile(
    r"\b(?:by|before|until|till|this|next|tomorrow|tonight|today|soon|on (?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)|in (?:january|february|march|april|may|june|july|august|september|"
    r"october|november|december)|end of|deadline|(?:19|20)\d\d|\d)\b",
    re.IGNORECASE,
)


def _have_to(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if not _TIME_MARKER.search(rest) or _first_word(rest) in {
        "go",
        "leave",
        "ask",
        "know",
        "say",
        "admit",
        "run",
    }:
        return None
    return _d(f"Has to {_third(rest)}", "goal", "goal")


def _have(m: re.Match[str]) -> Draft | None:
    obj = m.group("obj")
    if _is_vague(obj):
        return None
    words = [w.lower() for w in re.findall(r"[\w'-]+", obj)]
    head = [w for w in words if w not in HAVE_SKIP_WORDS]
    if not head or head[0] in HAVE_STOP_NOUNS or (words[:2] == ["no", "idea"]):
        return None
    text = f"{_cap(_adv(m))}{_conjugate(m.group('verb').lower())} {_third(obj)}"
    if set(words[:4]) & EVENT_NOUNS or (len(words) > 1 and words[1] in EVENT_NOUNS):
        return _d(text, "context", "schedule")
    if set(words[:5]) & FAMILY_WORDS:
        return _d(text, "personal", "family", IMPORTANT)
    if _HEALTH_RE.search(obj):
        return _d(text, "personal", "health", IMPORTANT)
    if set(words[:5]) & PET_WORDS:
        return _d(text, "personal", "pet")
    return _d(text, "personal", "possession")


# -- wants, plans, goals ------------------------------------------------------------------------

_GOAL_SKIP_VERBS = _words(
    "know see ask check understand talk chat discuss hear say tell show confirm clarify double-check "
    "make_sure be_sure go_back try_again mention share paste send add thank apologise apologize "
    "continue stop change rephrase read_your get_back"
)
_GOAL_VERBS = {
    "want": "Wants",
    "wanted": "Wanted",
    "'d like": "Would like",
    "would like": "Would like",
    "'d love": "Would love",
    "would love": "Would love",
    "hope": "Hopes",
    "plan": "Plans",
    "intend": "Intends",
    "aim": "Aims",
    "need": "Needs",
    "wish": "Wishes",
    "expect": "Expects",
    "mean": "Means",
}


def _goal(m: re.Match[str]) -> Draft | None:
    verb = m.group("verb").lower().replace("i'd", "'d").strip()
    rest = m.group("rest")
    first = _first_word(rest)
    two = "_".join(re.findall(r"[\w'-]+", rest.lower())[:2])
    if first in _GOAL_SKIP_VERBS or two in _GOAL_SKIP_VERBS or verb == "mean":
        return None
    if re.search(r"\byou\b", rest, re.IGNORECASE):
        return None
    if re.match(
        r"[\w-]+ (?:more )?(?:something|anything|it|this|that|them|one|more|again)\b", rest, re.IGNORECASE
    ):
        return None
    if first == "learn" and re.match(r"learn (?:more|about)\b", rest, re.IGNORECASE):
        return None
    if verb == "need" and not _TIME_MARKER.search(rest):
        return None
    if first == "go" and len(rest.split()) < 3:
        return None
    neg = " not" if m.group("neg") else ""
    lead = _GOAL_VERBS.get(verb, _cap(verb))
    text = f"{_cap(_adv(m))}{lead.lower() if _adv(m) else lead}{neg} to {_third(rest)}"
    return _d(text, "goal", "goal")


def _rather(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest) or _first_word(rest) in {"not", "say", "ask", "keep", "skip"}:
        return None
    return _d(f"Would {m.group('verb').lower()} {_third(rest)}", "preference", "preference")


# -- habits, likes, past events ------------------------------------------------------------------

_INTERACTION_OBJECT = re.compile(
    r"\b(?:answers?|repl(?:y|ies)|responses?|explanations?|tone|emojis?|bullet points?|formatting|"
    r"you|your|summaries|examples)\b",
    re.IGNORECASE,
)


def _category_for(verb: str, adverbs: str, text: str, base: tuple[str, str, float]) -> tuple[str, str, float]:
    category, tag, importance = base
    if (
        category == "preference"
        and _INTERACTION_OBJECT.search(text)
        and verb in ("prefer", "like", "love", "hate", "dislike")
    ):
        return "interaction", "assistant", USEFUL
    if re.search(r"\b(?:always|never)\b", adverbs):
        category, tag = "preference", "habit"
        if "never" in adverbs:
            importance = IMPORTANT
    elif verb in ("drink", "eat", "listen", "watch", "read", "play") and re.search(
        r"\b(?:usually|mostly|often)\b", adverbs
    ):
        category, tag = "preference", "preference"
    taste = verb in ("like", "love", "enjoy", "hate", "prefer", "dislike", "watch", "listen", "support")
    generic = category in ("personal", "preference") and tag in ("routine", "preference", "personal", "work")
    if generic and not taste and _mentions_tech(text):
        category, tag = "technical", "tech"
    if _HEALTH_RE.search(text) and category == "personal":
        tag, importance = "health", IMPORTANT
    return category, tag, importance


# Verbs that, with a frequency adverb, still say nothing about the user ("I always forget").
_NOT_HABITS = _words(
    "say said think thought know mean meant forget forgot wonder seem feel ask asked tell told agree "
    "understand see saw did was were am will can would should could have do get got try tried guess "
    "hope need want love like hate assume suppose believe"
)
_FREQUENCY_RE = re.compile(
    r"\b(?:always|never|usually|often|rarely|seldom|sometimes|regularly|normally|typically)\b"
)
_VAGUE_PAST_OBJECT_RE = re.compile(
    r"\s*(?:a |an |the |some )?(?:question|idea|error|problem|issue|bug|message|answer|reply|it|this|that|"
    r"confused|lost|stuck)\b",
    re.IGNORECASE,
)


_AND_VERB_RE = re.compile(
    r"\b(and|but) (also |then |now |still )?("
    + _alt(tuple(VERBS) + ("need", "want", "hope", "plan", "have"))
    + r")\b"
)


def _present_ok(verb: str, rest: str) -> bool:
    """Whether "I <verb> <rest>" (a known base verb) states something about the user."""
    if not rest.strip():
        return verb in INTRANSITIVE_OK
    first = _first_word(rest)
    if _is_vague(rest):
        return False
    if verb == "do" and (
        first in VERBS or first in {"think", "know", "believe", "agree", "mean", "not", "so", "the"}
    ):
        return False
    if verb == "get" and first not in {"up", "paid", "home", "to", "off"}:
        return False
    return not (verb == "know" and first in {"about", "of", "what", "how", "that", "why", "if"})


def _past_ok(verb: str, rest: str) -> bool:
    """Whether "I <past verb> <rest>" states something about the user (not "I got a question")."""
    if _is_vague(rest) or (verb == "used" and not rest.lower().startswith(" to ")):
        return False
    light = ("got", "had", "made", "took", "went", "lost", "won", "passed", "failed", "ran", "finished")
    return not (verb in light and (_first_word(rest) in HAVE_STOP_NOUNS or _VAGUE_PAST_OBJECT_RE.match(rest)))


def _and_verbs(rest: str) -> str:
    """Elided verbs after "and" conjugated too ("Works at X and need to..." -> "and needs to..."),
    unless an infinitive came first ("Likes to cook and bake")."""

    def conj(m: re.Match[str]) -> str:
        if re.search(r"\bto\b", rest[: m.start()]):
            return m.group(0)
        return f"{m.group(1)} {m.group(2) or ''}{_conjugate(m.group(3))}"

    return _AND_VERB_RE.sub(conj, rest)


def _habit(m: re.Match[str]) -> Draft | None:
    verb, rest, adverbs = m.group("verb"), m.group("rest"), _adv(m)
    low = verb.lower()
    if low in VERBS and _present_ok(low, rest):
        head, base = adverbs + _conjugate(verb), VERBS[low]
        if low == "go" and rest.lower().startswith(" by "):  # "I go by Sam"
            base = ("personal", "identity", IMPORTANT)
    elif low in PAST_VERBS and _past_ok(low, rest):
        head, base = adverbs + verb, PAST_VERBS[low]
    elif (
        _FREQUENCY_RE.search(adverbs)
        and low not in _NOT_HABITS
        and low not in VERBS
        and low not in PAST_VERBS
        and not low.endswith("ed")
        and _present_ok(low, rest)
    ):  # "I never fly budget airlines": a habit, whatever the verb
        head, base = adverbs + _conjugate(verb), ("preference", "habit", USEFUL)
    else:
        return None
    text = _cap(head) + _and_verbs(_third(rest))
    return _d(text, *_category_for(low, adverbs, text, base))


def _negated(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb"), m.group("rest")
    low = verb.lower()
    if low not in VERBS and low not in ("have", "want", "smoke", "own"):
        return None
    if _is_vague(rest) and low not in INTRANSITIVE_OK:
        return None
    adv2 = (m.group("adv2") or "").lower()
    text = f"{_cap(_adv(m))}{'does' if _adv(m) else 'Does'} not {adv2}{verb}{_third(rest)}"
    if low in ("eat", "drink", "smoke", "vape"):
        return _d(text, "personal", "diet", IMPORTANT)
    if low == "want":
        return _d(text, "goal", "goal")
    base = VERBS.get(low, ("personal", "possession", USEFUL))
    return _d(text, *_category_for(low, "", text, base))


def _cannot(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb").lower(), m.group("rest")
    if _is_vague(rest):
        return None
    text = f"{_cap(_adv(m))}{'cannot' if _adv(m) else 'Cannot'} {verb} {_third(rest)}"
    if verb in ("eat", "drink", "have", "tolerate", "digest"):
        return _d(text, "personal", "diet", IMPORTANT)
    return _d(text, "preference", "preference")


def _can(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb"), m.group("rest")
    if (
        verb.lower() not in VERBS
        or _is_vague(rest)
        or verb.lower() in ("like", "love", "get", "go", "do", "take", "make")
    ):
        return None
    text = f"Can {verb}{_third(rest)}"
    return _d(text, "technical" if _mentions_tech(text) else "personal", "skill")


def _was(m: re.Match[str]) -> Draft | None:
    what, rest = m.group("what"), m.group("rest")
    low = what.lower()
    text = f"Was {_adv(m)}{what}{_third(rest)}"
    if low in ("born", "raised", "brought up", "adopted"):
        return _d(text, "personal", "identity", IMPORTANT)
    if low == "diagnosed":
        return _d(text, "personal", "health", IMPORTANT)
    if low in ("married", "divorced", "engaged"):
        return _d(text, "personal", "family", IMPORTANT)
    return _d(text, "personal", "work")


def _used_to(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    return _d(
        f"Used to {_third(rest)}", "personal", "work" if re.match(r"be an? |work", rest) else "personal"
    )


_NAME_STOP = r"(?!(?:is|are|was|were|has|have|had|and|who|which|that|just|also|still|recently|now|currently|lives|live|works|work|moved|started|got|turned|loves|likes|hates|goes|went|says|said|will|can|does|do|did|never|always|used|is|recently|finally|passed|died)\b)"
_VP_START = (
    r"(?:is|are|was|were|has|have|had|works|work|worked|lives|live|lived|moved|just|also|still|recently|now|"
    r"currently|started|starts|got|gets|goes|go|went|turned|turns|studies|studied|teaches|taught|runs|ran|"
    r"owns|loves|love|likes|like|hates|hate|plays|play|speaks|speak|came|comes|left|became|will|can|does|"
    r"do|did|never|always|used|retired|passed|died|graduated|married|wants|want|plans|needs|visits|visited|"
    r"calls|drives|takes|cooks|makes|knows|helps|joined|quit|suffers|uses|use|finally|both|each|all|"
    r"\w+(?:s|ed))"
)


def _compile(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# The tables: (name, anchored pattern, rewrite). The first rule whose pattern matches a clause
# *and* whose rewrite returns a draft wins. Patterns run on the canonical clause ("I am" ->
# "I'm", "I've got" -> "I have", "don't" -> "do not", a leading "we"/"our" -> "I"/"my").
Rule = tuple[str, re.Pattern[str], RuleFn]

# How the user wants the assistant to behave. Tried before the instruction gate, since these are
# instructions too ("Always answer in German"), only lasting ones.
INTERACTION_RULES: tuple[Rule, ...] = (
    ("call me", _compile(r"^(?:you can |please |just |feel free to )?(?:call me|address me as|refer to me as) (?P<name>.+)$"), _call_me),
    ("like it when you", _compile(r"^I (?:really )?(?P<verb>like|love|prefer|appreciate|hate|dislike) it when you (?P<rest>.+)$"), _like_when_you),
    ("want your answers", _compile(r"^I (?:really )?(?P<verb>want|need|like|prefer) your (?P<rest>(?:answers|replies|responses|explanations|summaries|tone|code|messages|examples)\b.+)$"), _want_your),
    ("persistent lead", _compile(_PERSIST_LEAD + r"(?P<body>(?:please )?(?:always |never |do not )?" + _INSTRUCT_VERB + r"\b.+)$"), _persist_lead),
    ("when I ask, do", _compile(r"^(?P<when>when|whenever|every time|each time) I (?P<cond>[^,]+),\s*(?:please )?(?P<body>(?:always )?" + _INSTRUCT_VERB + r"\b.+)$"), _when_instruction),
    ("always/never do", _compile(r"^(?:please |pls |and )?(?P<padv>always|never|in future,? always|in future,? never)\s+(?P<body>(?:please )?" + _INSTRUCT_VERB + r"\b.+)$"), _persist_adverb),
    ("do not do, lasting", _compile(r"^(?:please |pls )?do not (?:ever )?(?P<body>" + _INSTRUCT_VERB + r"\b.*\b(?:(?:when|whenever|if) you|to me|with me|for me|ever|again|anymore|any more|in (?:your )?(?:answers|replies|responses))\b.*)$"), _negative_instruction),
    ("stop doing", _compile(r"^(?:please |pls |can you |could you )?stop (?P<body>\w+ing\b.*)$"), _stop_instruction),
    ("be X with me", _compile(r"^(?:please |pls )?(?P<body>(?:be|stay|keep it) [\w -]+ with me\b.*)$"), _be_with_me),
    ("lasting instruction", _compile(r"^(?:please |pls )?(?P<body>" + _INSTRUCT_VERB + r"\b.*\b(?:from now on|in future|in the future|going forward|every time|by default|always)\b.*)$"), _be_with_me),
)  # fmt: skip

# Statements about the user.
STATEMENT_RULES: tuple[Rule, ...] = (
    # my ...
    ("my name", _compile(r"^my (?:full |first |real )?name is (?P<name>.+)$"), _my_name),
    ("my relative's name", _compile(r"^my (?P<rel>" + REL_RE + r")'s name is (?P<name>.+)$"), _relative_name),
    ("my relative and I", _compile(r"^my (?P<rel>" + REL_RE + r") and I (?P<vp>.+)$"), _relative_and_i),
    ("my relative", _compile(r"^my (?P<rel>" + REL_RE + r"),? (?:" + _NAME_STOP + r"(?P<name>[^\W\d][\w'’.-]*),? )?(?P<vp>" + _VP_START + r"\b.+)$"), _relative),
    ("my thing", _compile(r"^my (?P<np>(?:[\w'-]+ ){0,4}?[\w'-]+) (?P<verb>is|are|was|were|runs|run|goes|go|leaves|lives|live|starts|has|have|uses|use|includes|include|costs|sits|stays|ends|begins|works|lies|expires|weighs|opens|arrives|departs|happens|gets|falls)\b(?P<rest>.*)$"), _my_thing),
    ("X is my Y", _compile(r"^(?P<value>[^,]+?) (?:is|are) my (?P<np>.+)$"), _is_my),
    ("home is", _compile(r"^home (?:for me |for us |nowadays |these days )?is (?P<rest>.+)$"), _home_is),
    # I'm ...
    ("I'm <Name>", re.compile(r"^I'm (?P<name>[A-ZÀ-Þ][a-zà-ÿ'’-]+)(?:\s*,.*| here| by the way)?$"), _im_name),
    ("i'm <name>, nice to meet you", _compile(r"^I'm (?P<name>[^\W\d]+),? (?:nice|pleased|glad) to meet you.*$"), _im_name),
    ("I'm N", _compile(r"^I'm (?:now |just |almost |nearly |about )?(?P<age>\d{1,3})(?: years? old| yo| y/o| yrs old)?(?P<rest>(?:,? (?:and )?(?:turning|going on|in|since|as of)\b.*)?)$"), _im_age),
    ("I'm N tall", _compile(r"^I'm (?:about |around |roughly )?(?P<h>[\d\w.'\"’ ]{1,20}?) tall(?P<rest>.*)$"), _im_tall),
    ("I'm <nationality>", _compile(r"^I'm (?P<q>(?:half|part|originally|also|fully)[- ])?(?P<nat>" + NATIONALITY_RE + r")(?P<rest>(?:$|[,.]| and | but | by birth| born| on my| citizen| national|-).*)$"), _im_nationality),
    ("I'm fluent in", _compile(r"^I'm (?P<rest>(?:fluent|native|bilingual|conversational|proficient) in .+)$"), _im_language),
    ("I'm from", _compile(r"^I'm " + ADV_RE + r"(?P<how>from|originally from) (?P<rest>.+)$"), _im_from),
    ("I'm based in", _compile(r"^I'm " + ADV_RE + r"(?P<how>based|located|living|settled|staying|residing) (?P<rest>(?:in|near|outside|just outside|around|on) .+)$"), _im_based),
    ("I'm allergic", _compile(r"^I'm " + ADV_RE + r"(?:severely |mildly |very |extremely )?allergic to (?P<rest>.+)$"), _im_allergic),
    ("I'm a fan of", _compile(r"^I'm (?P<neg>not )?" + ADV_RE + r"(?P<what>(?:a |an )?(?:(?:huge|big|massive|great|major|total|die-hard) )?fan of|(?:really |so |super |very |totally )?(?:into|obsessed with|passionate about|crazy about|keen on|fond of)) (?P<rest>.+)$"), _im_fan),
    ("I'm a X person", _compile(r"^I'm (?P<what>(?:(?:definitely |more of |more |very much |totally |really )?(?:a|an) )?(?:[\w-]+ ){0,3}(?:person|night owl|early bird|morning person|evening person))(?P<rest>.*)$"), _im_person),
    ("I'm new to", _compile(r"^I'm (?P<neg>not )?" + ADV_RE + r"(?P<what>new to|comfortable with|familiar with|good at|bad at|great at|terrible at|experienced (?:with|in)|an expert (?:in|on)|proficient (?:in|with)|fluent in|decent at|okay at|ok at|rusty (?:in|with|at)|self-taught in|certified in) (?P<rest>.+)$"), _im_skill),
    ("I'm <state>", _compile(r"^I'm (?P<neg>not )?" + ADV_RE + r"(?:(?:strictly|fully|mostly|totally|pretty|quite|very|severely|mildly|happily|recently|newly) )?(?P<state>" + STATE_RE + r")\b(?P<rest>.*)$"), _im_state),
    ("I'm on", _compile(r"^I'm " + ADV_RE + r"on (?P<rest>.+)$"), _im_on),
    ("I'm in/at", _compile(r"^I'm " + ADV_RE + r"(?P<prep>in|at|off|away|between|back in|abroad in|out of|home in|stuck in|visiting) (?P<rest>.+)$"), _im_place),
    ("I'm <verb>ing", _compile(r"^I'm " + ADV_RE + r"(?P<verb>[a-z][a-z-]*ing)\b(?P<rest>.*)$"), _im_progressive),
    ("I'm a", _compile(r"^I'm " + ADV_RE + r"(?P<art>a|an) (?P<noun>.+)$"), _im_a),
    # I have ...
    ("I have to", _compile(r"^I (?:really |still |also )?have to (?P<rest>.+)$"), _have_to),
    ("I have <done>", _compile(r"^I have " + ADV_RE + r"(?P<pp>been|[a-z]+ed|had|got|gotten|gone|done|made|known|taken|grown|become|begun|run|seen|spoken|written|built|taught|learnt|driven|sold|bought|broken|won|lost|met|left|quit|read|heard|told|said|thought|felt|kept|spent|taken up|given up)\b(?P<rest>.*)$"), _have_perfect),
    ("I have", _compile(r"^I " + ADV_RE + r"(?P<verb>have|own|possess) (?P<obj>.+)$"), _have),
    # wants, plans
    ("I'd rather", _compile(r"^I'd (?P<verb>rather|sooner|prefer) (?P<rest>.+)$"), _rather),
    ("I want to", _compile(r"^I " + ADV_RE + r"(?P<verb>want|wanted|'d like|would like|'d love|would love|hope|plan|intend|aim|need|wish|expect|mean)(?P<neg> not)? to (?P<rest>.+)$"), _goal),
    ("I'd like to", _compile(r"^I(?P<verb>'d like|'d love)(?P<neg> not)? to (?P<adv>)(?P<rest>.+)$"), _goal),
    # habits, likes, past events
    ("I was", _compile(r"^I was " + ADV_RE + r"(?P<what>born|raised|brought up|diagnosed|adopted|married|divorced|engaged|promoted|hired|laid off|fired|made redundant|educated|injured|a|an|in the army|in the navy)\b(?P<rest>.*)$"), _was),
    ("I used to", _compile(r"^I used to (?P<rest>.+)$"), _used_to),
    ("I do not", _compile(r"^I " + ADV_RE + r"do not (?P<adv2>(?:really |usually |ever |generally |actually |even |normally |typically )*)(?P<verb>[a-z][a-z-]*)(?P<rest>(?:\s.*)?)$"), _negated),
    ("I cannot stand", _compile(r"^I " + ADV_RE + r"cannot (?P<verb>stand|bear|stomach|handle|tolerate|live without|eat|drink|have|digest|do without) (?P<rest>.+)$"), _cannot),
    ("I can", _compile(r"^I can (?P<verb>[a-z][a-z-]*)(?P<rest>(?:\s.*)?)$"), _can),
    ("I <verb>", _compile(r"^I " + ADV_RE + r"(?P<verb>[a-z][a-z-]*)(?P<rest>(?:\s.*)?)$"), _habit),
)  # fmt: skip

RULES: tuple[Rule, ...] = INTERACTION_RULES + STATEMENT_RULES


# ---------------------------------------------------------------------------------------------
# Gates and splitting
# ---------------------------------------------------------------------------------------------


def _is_question(text: str) -> bool:
    """A question: ends with "?", or starts like one ("what's...", "do you...", "have I...")."""
    stripped = text.rstrip()
    if stripped.endswith("?"):
        return True
    first = _first_word(stripped)
    if first == "have":
        return bool(re.match(r"have (?:I|you|we)\b", stripped, re.IGNORECASE))
    if first in ("do", "does"):
        return not re.match(r"do(?:es)? not\b", stripped, re.IGNORECASE)
    if first in ("when", "whenever"):  # "When I ask for code, give me..." sets a habit
        return not re.match(r"when(?:ever)? (?:I|we)\b", stripped, re.IGNORECASE)
    return first in QUESTION_STARTS


def _is_instruction(text: str) -> bool:
    low = text.lower()
    if _first_word(low) in IMPERATIVES:
        return True
    return bool(
        re.match(
            r"(?:please |pls |kindly )?(?:can|could|would|will) you\b|"
            r"I (?:want|need|'d like|would like|'d love|expect) you\b|"
            r"I (?:want|need|'d like|would like) (?:a|an|the|some|more|help|to (?:see|know|ask|check|understand|hear|learn more))\b|"
            r"I need (?!to\b)|let'?s\b|I wonder\b|I was wondering\b|I'm looking for\b",
            text,
            re.IGNORECASE,
        )
    )


def _prepare_clause(text: str) -> str:
    """Prefixes, fillers and a leading time phrase dealt with; the clause in canonical spelling."""
    text = text.strip().strip("\"'").strip()
    for _ in range(3):
        new = _PREFIX_RE.sub("", text).strip()
        new = _FILLER_END_RE.sub("", new).strip()
        if new == text:
            break
        text = new
    text = text.rstrip(" .!…,:;")
    text = _canonical(text)
    text = _DROP_LEAD_RE.sub("", text)
    if _GERUND_START_RE.match(text):
        text = "I'm " + text[:1].lower() + text[1:]
    return text


def _move_lead(text: str) -> tuple[str, str]:
    """A leading time phrase ("This year I want...") split off, to be appended to the fact."""
    m = _LEAD_RE.match(text)
    if not m:
        return text, ""
    lead = m.group("lead").strip()
    return _canonical(text[m.end() :]), lead[:1].lower() + lead[1:]


def _apply(clause: str, rules: Sequence[Rule]) -> Draft | None:
    """The draft of the first of ``rules`` that matches ``clause`` and returns one, or None."""
    if len(clause) > MAX_CLAUSE_CHARS:
        return None
    body, lead = _move_lead(clause)
    for _name, pattern, rewrite in rules:
        m = pattern.match(body)
        draft = rewrite(m) if m else None
        if draft is not None:
            if lead:
                content = f"{draft.content.rstrip(' ,')} {lead}"
                draft = Draft(content, draft.category, draft.tag, draft.importance)
            return draft
    return None


def _statement(clause: str) -> Draft | None:
    """The draft of one clause, or None for a question, hypothetical, instruction or no match."""
    if not clause or _is_question(clause) or HYPOTHETICAL_RE.match(clause) or _CONDITIONAL_RE.search(clause):
        return None
    draft = _apply(clause, INTERACTION_RULES)
    if draft is not None:
        return draft
    if _is_instruction(clause):
        return None
    return _apply(clause, STATEMENT_RULES)


_ELIDED_VERB_RE = re.compile(
    r"^(?:(?:"
    + _alt(ADVERBS)
    + r")\s+)*(?:"
    + _alt(
        tuple(VERBS)
        + tuple(PAST_VERBS)
        + (
            "have",
            "has",
            "am",
            "was",
            "want",
            "plan",
            "need",
            "hope",
            "love",
            "can",
            "cannot",
            "do not",
            "never",
            "always",
            "used",
            "grew",
        )
    )
    + r")\b",
    re.IGNORECASE,
)


def _first_cut(piece: str, subject_i: bool) -> tuple[str, str] | None:
    """The first (left, right) split of ``piece`` at a conjunction where both sides are statements.
    Only the first ``MAX_CLAUSE_CHARS`` of a right side are tested (the rules read a clause's head)."""
    for m in _CONJ_RE.finditer(piece):
        if m.start() > MAX_CLAUSE_CHARS:
            return None
        left, right = piece[: m.start()], piece[m.end() :]
        if subject_i and _ELIDED_VERB_RE.match(right):
            right = "I " + right
        head = right[:MAX_CLAUSE_CHARS]
        if _statement(_prepare_clause(left)) is not None and _statement(_prepare_clause(head)) is not None:
            return left, right
    return None


def _split_conjunctions(piece: str) -> list[str]:
    """``piece`` cut at " and " / " but " / ", I" where both sides are statements on their own.
    A right side with an elided subject ("... and work as a nurse") borrows the "I"."""
    subject_i = bool(re.match(r"I\b", piece))
    clauses: list[str] = []
    while (cut := _first_cut(piece, subject_i)) is not None:
        clauses.append(cut[0])
        piece = cut[1]
    clauses.append(piece)
    return clauses


def _pieces(text: str) -> list[str]:
    """Sentences, with a trailing question or request cut off each."""
    raw = [s for s in _SENTENCE_RE.split(text) if s and s.strip()]
    merged: list[str] = []
    for s in raw:
        if merged and _ABBREV_END_RE.search(merged[-1]):
            merged[-1] = merged[-1] + " " + s
        else:
            merged.append(s)
    out: list[str] = []
    for s in merged:
        out.extend(p for p in _TAIL_QUESTION_RE.split(s) if p.strip())
    return out


def _tags(tag: str, content: str) -> tuple[str, ...]:
    """The rule's topic tag and, when the fact names something, that name (lowercase, hyphenated)."""
    tags = [tag]
    m = re.search(r"(?<=\s)([A-ZÀ-Þ][\w’'-]*(?:\s+[A-ZÀ-Þ][\w’'-]*){0,2})", content[1:])
    if m:
        word = "-".join(re.findall(r"[^\W_]+", m.group(1).lower()))
        if word and word not in tags and len(word) <= 40:
            tags.append(word)
    return tuple(t for t in tags if t)


def _finish(content: str) -> str:
    """One tidy sentence: spaces collapsed, no space before punctuation, a capital, a full stop.
    Runs on the masked text, so quoted strings, URLs and paths are never touched."""
    content = " ".join(content.split()).strip(" ,;:")
    content = re.sub(r"\s+[-–—]+$", "", content)
    content = re.sub(r"\s+([,.;:!?])", r"\1", content)
    content = _cap(content.rstrip(".!…"))
    return content + "." if content and content[-1] not in ".?!" else content


class RuleExtractor:
    """Facts from first-person statements, by rules (see the module docstring for what it can and
    cannot catch). Never raises; ``known`` is ignored (the classifier handles repeats)."""

    name = "rules"

    def extract(self, turn: Turn, known: Sequence[str] = ()) -> Extraction:
        warnings: list[str] = []
        text = _sanitise(getattr(turn, "user", ""))
        if len(text) > MAX_SCAN_CHARS:
            warnings.append(
                f"user message is {len(text):,} characters; only the first {MAX_SCAN_CHARS:,} were scanned for facts"
            )
            text = text[:MAX_SCAN_CHARS]
        text = _QUOTED_LINE_RE.sub(" ", _FENCE_RE.sub(" ", text))
        masks = _Masks()
        text = masks.mask(text)
        facts: list[ExtractedFact] = []
        seen: set[str] = set()
        for piece in _pieces(text):
            piece = piece.strip()
            if not piece or len(piece) > MAX_SENTENCE_CHARS:
                continue
            if HYPOTHETICAL_RE.match(_PREFIX_RE.sub("", piece)) or _is_question(piece):
                continue
            remember = bool(_REMEMBER_RE.match(piece))
            prepared = _prepare_clause(piece)
            for clause in _split_conjunctions(prepared):
                draft = _statement(_prepare_clause(clause))
                if draft is None:
                    continue
                content = masks.restore(_finish(draft.content))
                if not content or len(content) > MAX_FACT_CHARS or content.lower() in seen:
                    continue
                seen.add(content.lower())
                importance = max(draft.importance, IMPORTANT) if remember else draft.importance
                category = draft.category
                if category == "personal" and masks.has_path(draft.content):
                    category = "technical"
                facts.append(ExtractedFact(content, category, _tags(draft.tag, content), importance))
                if len(facts) >= MAX_FACTS:
                    warnings.append(f"more than {MAX_FACTS} facts in one turn; the rest were not extracted")
                    return Extraction(facts=facts, extractor=self.name, warnings=warnings)
        return Extraction(facts=facts, extractor=self.name, warnings=warnings)
