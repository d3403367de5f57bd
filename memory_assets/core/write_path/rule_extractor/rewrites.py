"""The rewrites of statements about the user: one function per rule of ``table.STATEMENT_RULES``.

Each rewrite takes the match of its rule's anchored pattern on a canonical clause ("I'm", "I have",
"do not", a leading "we"/"our" as "I"/"my") and returns a ``Draft`` (the fact's sentence, still
masked, with its category, topic tag and importance) or None when the clause, though it matched,
says nothing about the user's life ("I have a question", "my code crashes", "I'm wondering...").
A rewrite changes only the head of the clause (the subject and its verb: "I live" -> "Lives",
"My sister Ana is" -> "Has a sister, Ana, who is") and passes the rest through ``_third`` (first
person to third), so every specific the user gave reaches the fact as written.

Sections, in the table's order: "my ...", "I'm ...", "I have ...", wants and plans, and habits,
likes and past events ("I <verb> ..."). The rewrites of lasting instructions to the assistant are in
``instruction_rewrites.py``. Pure functions: no state, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory_assets.core.write_path.rule_extractor.vocabulary import (
    _HEALTH_RE,
    _NATIONALITIES_LOWER,
    DEICTIC,
    EPHEMERAL_NOUNS,
    EVENT_NOUNS,
    FAMILY_WORDS,
    HAVE_SKIP_WORDS,
    HAVE_STOP_NOUNS,
    IMPORTANT,
    INTRANSITIVE_OK,
    MY_NOUN_CATEGORY,
    NATIONALITY_RE,
    NON_FAMILY,
    PAST_VERBS,
    PET_WORDS,
    QUESTION_STARTS,
    STATES,
    USEFUL,
    VERBS,
    _alt,
    _capitalise,
    _conjugate,
    _first_word,
    _is_vague,
    _mentions_tech,
    _third,
    _words,
)


@dataclass(frozen=True)
class Draft:
    """A fact before tags: its sentence (still masked), category, topic tag and importance."""

    content: str
    category: str
    tag: str
    importance: float = USEFUL


def _adv(m: re.Match[str], group: str = "adv") -> str:
    return (m.groupdict().get(group) or "").lower()


# -- "my ..." -----------------------------------------------------------------------------------


def _my_name(m: re.Match[str]) -> Draft | None:
    name = m.group("name").strip()
    if _is_vague(name) or len(name.split()) > 5:
        return None
    return Draft(f"Their name is {name}", "personal", "identity", IMPORTANT)


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
    return Draft(f"Has {article} {rel} named {name}", "personal", tag, importance)


def _relative_and_i(m: re.Match[str]) -> Draft | None:
    return Draft(f"They and their {m.group('rel')} {_third(m.group('vp'))}", "personal", "family", IMPORTANT)


def _relative(m: re.Match[str]) -> Draft | None:
    rel, name, vp = m.group("rel"), m.group("name"), m.group("vp")
    if vp.rstrip().endswith("?"):
        return None
    tag, importance = _relation_tag(rel)
    vp = _third(vp)
    if name:
        article = "an" if rel[:1].lower() in "aeiou" else "a"
        return Draft(f"Has {article} {rel}, {name}, who {vp}", "personal", tag, importance)
    return Draft(f"Their {rel} {vp}", "personal", tag, importance)


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
    return Draft(text, category, tag, importance)


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
    return Draft(f"Their {_third(np)} is {value}", category, tag, importance)


def _home_is(m: re.Match[str]) -> Draft | None:
    return Draft(f"Home is {_third(m.group('rest'))}", "personal", "home")


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
    return Draft(f"Their name is {name}", "personal", "identity", IMPORTANT)


def _im_age(m: re.Match[str]) -> Draft | None:
    age = int(m.group("age"))
    if not 3 <= age <= 120:
        return None
    return Draft(
        f"Is {m.group('age')} years old{_third(m.group('rest') or '')}", "personal", "identity", IMPORTANT
    )


def _im_tall(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {m.group('h')} tall{_third(m.group('rest'))}", "personal", "health", IMPORTANT)


def _im_nationality(m: re.Match[str]) -> Draft | None:
    qualifier = m.group("q") or ""
    return Draft(
        f"Is {qualifier}{m.group('nat')}{_third(m.group('rest'))}", "personal", "identity", IMPORTANT
    )


def _im_language(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {_third(m.group('rest'))}", "personal", "language", IMPORTANT)


def _im_from(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {_adv(m)}{m.group('how')} {_third(m.group('rest'))}", "personal", "identity", IMPORTANT)


def _im_based(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {_adv(m)}{m.group('how')} {_third(m.group('rest'))}", "personal", "home")


def _im_allergic(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {_adv(m)}allergic to {_third(m.group('rest'))}", "personal", "health", IMPORTANT)


def _im_state(m: re.Match[str]) -> Draft | None:
    state = m.group("state")
    category, tag, importance = STATES[state.lower()]
    neg = "not " if m.group("neg") else ""
    return Draft(f"Is {neg}{_adv(m)}{state}{_third(m.group('rest'))}", category, tag, importance)


def _im_fan(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    return Draft(
        f"Is {m.group('neg') or ''}{_adv(m)}{m.group('what')} {_third(rest)}", "preference", "preference"
    )


def _im_person(m: re.Match[str]) -> Draft | None:
    return Draft(f"Is {m.group('what')}{_third(m.group('rest'))}", "preference", "preference")


def _im_skill(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    text = f"Is {m.group('neg') or ''}{_adv(m)}{m.group('what')} {_third(rest)}"
    return Draft(text, "technical" if _mentions_tech(text) else "personal", "skill")


def _im_on(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    low = rest.lower()
    text = f"Is {_adv(m)}on {_third(rest)}"
    if re.match(r"(?:a |an )?[\w-]*\s*diet\b|(?:a |an )?(?:[\w-]+ )?diet\b|medication|meds\b", low):
        return Draft(text, "personal", "diet", IMPORTANT)
    if re.match(
        r"(?:holiday|holidays|vacation|leave|sick leave|parental leave|maternity leave|paternity leave|"
        r"a break|break|a trip|a business trip|sabbatical|call|the road|tour)\b",
        low,
    ):
        return Draft(text, "context", "schedule")
    if _mentions_tech(rest):
        return Draft(text, "technical", "tech")
    return None


def _im_place(m: re.Match[str]) -> Draft | None:
    prep, rest = m.group("prep").lower(), m.group("rest")
    if _is_vague(rest) or rest.strip().lower() in {"the chat", "my phone", "a meeting", "work"}:
        return None
    text = f"Is {_adv(m)}{prep} {_third(rest)}"
    if re.match(r"(?:my|their) (?:\w+ )?(?:year|semester|term)\b", rest, re.IGNORECASE):
        return Draft(text, "personal", "study")
    return Draft(text, "context", "situation")


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
        return Draft(text, "goal", "goal")
    if verb in ("studying", "living", "teaching", "dating", "raising", "expecting"):
        return Draft(text, "personal", "personal", IMPORTANT if verb in ("dating", "expecting") else USEFUL)
    if verb == "working" and not re.match(
        r"working (?:on|from|remotely|late|overtime)\b", phrase, re.IGNORECASE
    ):
        return Draft(text, "personal", "work")
    if verb in ("using", "running", "coding", "programming", "deploying", "hosting") and _mentions_tech(
        phrase
    ):
        return Draft(text, "technical", "tech")
    return Draft(text, "context", "situation")


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
        return Draft(text, "personal", "language", IMPORTANT)
    if re.match(NATIONALITY_RE + r"\b", noun, re.IGNORECASE):
        return Draft(text, "personal", "identity", IMPORTANT)
    if re.search(r"\b(?:person|owl|bird)\b", noun, re.IGNORECASE):
        return Draft(text, "preference", "preference")
    if re.search(
        r"\b(?:introvert|extrovert|ambivert|only child|twin|mom|mum|dad|mother|father|parent|grandparent)\b",
        noun,
        re.IGNORECASE,
    ):
        return Draft(text, "personal", "identity", IMPORTANT)
    return Draft(text, "personal", "work")


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
    return Draft(text, category, tag, importance)


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
    return Draft(f"Has to {_third(rest)}", "goal", "goal")


def _have(m: re.Match[str]) -> Draft | None:
    obj = m.group("obj")
    if _is_vague(obj):
        return None
    words = [w.lower() for w in re.findall(r"[\w'-]+", obj)]
    head = [w for w in words if w not in HAVE_SKIP_WORDS]
    if not head or head[0] in HAVE_STOP_NOUNS or (words[:2] == ["no", "idea"]):
        return None
    text = f"{_capitalise(_adv(m))}{_conjugate(m.group('verb').lower())} {_third(obj)}"
    if set(words[:4]) & EVENT_NOUNS or (len(words) > 1 and words[1] in EVENT_NOUNS):
        return Draft(text, "context", "schedule")
    if set(words[:5]) & FAMILY_WORDS:
        return Draft(text, "personal", "family", IMPORTANT)
    if _HEALTH_RE.search(obj):
        return Draft(text, "personal", "health", IMPORTANT)
    if set(words[:5]) & PET_WORDS:
        return Draft(text, "personal", "pet")
    return Draft(text, "personal", "possession")


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
    lead = _GOAL_VERBS.get(verb, _capitalise(verb))
    text = f"{_capitalise(_adv(m))}{lead.lower() if _adv(m) else lead}{neg} to {_third(rest)}"
    return Draft(text, "goal", "goal")


def _rather(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest) or _first_word(rest) in {"not", "say", "ask", "keep", "skip"}:
        return None
    return Draft(f"Would {m.group('verb').lower()} {_third(rest)}", "preference", "preference")


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


# "I painted that old garden bench", "I adopted this shy greyhound": after a past verb, a
# demonstrative that opens a noun phrase of two words or more points at a thing, not at the talk.
_DEMONSTRATIVE_THING_RE = re.compile(
    r"^\s*(?:this|that|these|those) (?!(?:for|to|with|of|in|on|at|from|about|as|so|too|and|or|but|is|was|"
    r"one|ones|time|way|thing|stuff|you|he|she|it|we|they|i|me|my|your|our|their)\b)[a-z][a-z'-]*(?<!ing) [a-z]",
    re.IGNORECASE,
)


def _past_ok(verb: str, rest: str) -> bool:
    """Whether "I <past verb> <rest>" states something about the user (not "I got a question")."""
    if verb == "used" and not rest.lower().startswith(" to "):
        return False
    if _is_vague(rest) and not _DEMONSTRATIVE_THING_RE.match(rest):
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
    text = _capitalise(head) + _and_verbs(_third(rest))
    return Draft(text, *_category_for(low, adverbs, text, base))


def _negated(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb"), m.group("rest")
    low = verb.lower()
    if low not in VERBS and low not in ("have", "want", "smoke", "own"):
        return None
    if _is_vague(rest) and low not in INTRANSITIVE_OK:
        return None
    adv2 = (m.group("adv2") or "").lower()
    text = f"{_capitalise(_adv(m))}{'does' if _adv(m) else 'Does'} not {adv2}{verb}{_third(rest)}"
    if low in ("eat", "drink", "smoke", "vape"):
        return Draft(text, "personal", "diet", IMPORTANT)
    if low == "want":
        return Draft(text, "goal", "goal")
    base = VERBS.get(low, ("personal", "possession", USEFUL))
    return Draft(text, *_category_for(low, "", text, base))


def _cannot(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb").lower(), m.group("rest")
    if _is_vague(rest):
        return None
    text = f"{_capitalise(_adv(m))}{'cannot' if _adv(m) else 'Cannot'} {verb} {_third(rest)}"
    if verb in ("eat", "drink", "have", "tolerate", "digest"):
        return Draft(text, "personal", "diet", IMPORTANT)
    return Draft(text, "preference", "preference")


def _can(m: re.Match[str]) -> Draft | None:
    verb, rest = m.group("verb"), m.group("rest")
    if (
        verb.lower() not in VERBS
        or _is_vague(rest)
        or verb.lower() in ("like", "love", "get", "go", "do", "take", "make")
    ):
        return None
    text = f"Can {verb}{_third(rest)}"
    return Draft(text, "technical" if _mentions_tech(text) else "personal", "skill")


def _was(m: re.Match[str]) -> Draft | None:
    what, rest = m.group("what"), m.group("rest")
    low = what.lower()
    text = f"Was {_adv(m)}{what}{_third(rest)}"
    if low in ("born", "raised", "brought up", "adopted"):
        return Draft(text, "personal", "identity", IMPORTANT)
    if low == "diagnosed":
        return Draft(text, "personal", "health", IMPORTANT)
    if low in ("married", "divorced", "engaged"):
        return Draft(text, "personal", "family", IMPORTANT)
    return Draft(text, "personal", "work")


def _used_to(m: re.Match[str]) -> Draft | None:
    rest = m.group("rest")
    if _is_vague(rest):
        return None
    return Draft(
        f"Used to {_third(rest)}", "personal", "work" if re.match(r"be an? |work", rest) else "personal"
    )
