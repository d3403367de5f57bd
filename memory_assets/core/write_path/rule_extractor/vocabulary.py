"""The rule-based extractor's vocabulary: the word tables the rules match, and the word-level
helpers they rewrite with.

What it owns:

- the importance levels every fact gets one of (``IMPORTANT``, ``USEFUL``);
- the word tables, each a tuple, a frozenset or a dict of word -> (category, tag, importance):
  people and pets (``RELATIONS``, ``PETS``, ``FAMILY_WORDS``, ``PET_WORDS``, ``NON_FAMILY``),
  ``NATIONALITIES``, the states of a person (``STATES``), ``TECH_TERMS``, the base and past verbs
  (``VERBS``, ``PAST_VERBS``), ``ADVERBS``, the nouns that decide a "my ..." fact's category
  (``MY_NOUN_CATEGORY``) or make it conversation (``EPHEMERAL_NOUNS``, ``HAVE_STOP_NOUNS``), and the
  words that open a question, an instruction or a hypothetical (``QUESTION_STARTS``,
  ``IMPERATIVES``, ``HYPOTHETICAL_RE``);
- the regex alternations built from them (``REL_RE``, ``NATIONALITY_RE``, ``STATE_RE``,
  ``ADV_RE``): longest word first, so "best friend" wins over "friend";
- the word-level helpers: first person to third (``_third``: my -> their, and with
  ``assistant`` your -> its), ``_conjugate`` (live -> lives), ``_first_word``, ``_is_vague`` (an
  object that points at the conversation: "it", "this"), ``_mentions_tech``, ``_capitalise``.

Everything here is a constant or a pure function of its arguments; a word added to a table changes
what the rules catch, never how a clause is split or gated (``pipeline.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

IMPORTANT = 0.8  # identity, family, health, hard constraints, and anything the user asks to remember
USEFUL = 0.6


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
    # What people tell each other they did: one-off events, kept as context.
    **{
        v: ("context", "event", USEFUL)
        for v in (
            "painted", "drew", "cooked", "baked", "hiked", "climbed", "swam", "played", "watched", "saw",
            "tried", "attended", "organised", "organized", "volunteered", "donated", "celebrated",
            "travelled", "traveled", "explored", "camped", "performed", "recorded", "released", "designed",
            "created", "found", "received", "planted", "renovated", "hosted", "gave", "taught", "helped",
            "raised", "competed", "fixed", "repaired", "picked", "bumped", "stumbled",
        )
    },
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

# -- first person to third ---------------------------------------------------------------

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


def _capitalise(text: str) -> str:
    """``text`` with its first character upper-cased (the rest as written)."""
    return text[:1].upper() + text[1:] if text else text
