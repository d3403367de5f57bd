"""The rule-based extractor's pipeline (prepare, split, gate, rewrite) and ``RuleExtractor``.

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
4. **Rewrite** each clause with the first matching rule of ``table.RULES``: a table of anchored
   patterns, each with a small rewrite function. A rule rewrites only the head of the clause (the
   subject and its verb: "I live" -> "Lives", "My sister Ana is" -> "Has a sister, Ana, who is");
   the rest of the clause is kept as written, with first-person pronouns turned into third-person
   ones (my -> their, me -> them). So every specific the user gave (numbers, dates, times, names,
   quoted strings, paths, URLs, versions) reaches the fact verbatim.

Every rule needs a first-person anchor (I, my, we, our, me), so a statement about someone else
with no link to the user ("Ana lives in Lisbon") yields nothing. ``known`` facts are ignored:
the rules do not try to recognise repeats; the classifier downstream compares each fact with
what memory holds and records a plain repeat as a confirmation (design §5.6).

Deterministic: the same turn always gives the same facts, in the order stated.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_assets.core.write_path.extraction import ExtractedFact, Extraction, Turn
from memory_assets.core.write_path.rule_extractor.rewrites import Draft
from memory_assets.core.write_path.rule_extractor.table import INTERACTION_RULES, STATEMENT_RULES, Rule
from memory_assets.core.write_path.rule_extractor.vocabulary import (
    _CONDITIONAL_RE,
    ADVERBS,
    HYPOTHETICAL_RE,
    IMPERATIVES,
    IMPORTANT,
    PAST_VERBS,
    QUESTION_STARTS,
    VERBS,
    _alt,
    _capitalise,
    _first_word,
)

MAX_SCAN_CHARS = 8000  # only the start of a longer message is scanned (a warning says so)
MAX_FACTS = 24  # facts from one turn at most
MAX_CLAUSE_CHARS = 400  # a longer "clause" is pasted prose, not a statement; skipped
MAX_SENTENCE_CHARS = 1200  # a longer run-on "sentence" is skipped whole (pasted text, not a statement)
MAX_FACT_CHARS = 320  # one sentence; a longer rewrite is not emitted

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
    r"for now|for the moment|these past few (?:weeks|months|years)|yesterday|the day before yesterday|"
    r"the other day|last night|earlier today|earlier this (?:week|month|year)|over the weekend|"
    r"(?:last|this|on) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|"
    r"thurs|fri|sat|sun)|(?:a|one|two|three|four|five|a few|a couple of|\d{1,2}) (?:days?|weeks?|months?|"
    r"years?) ago)(?:,\s*|\s+)(?=(?:I|I'm|my|we|we're|our)\b)",
    re.IGNORECASE,
)
_DROP_LEAD_RE = re.compile(
    r"^(?:honestly|actually|basically|personally|well|so|also|and|but|anyway|ok so|okay so|oh|wow|yeah|yep|"
    r"yup|sure|definitely|totally|absolutely|thanks|thank you|cool|great|awesome|nice|guess what|"
    r"on another note|on a different note|on a side note|by the way)(?:,\s*|\s+)(?=(?:I|my|we|our)\b)",
    re.IGNORECASE,
)
_ELIDED_PAST_RE = re.compile(r"^(?:just|finally|recently) " + _alt(tuple(PAST_VERBS)) + r"\b", re.IGNORECASE)
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
    elif _ELIDED_PAST_RE.match(text):  # "Just got home from a ski trip": the subject left out
        text = "I " + text[:1].lower() + text[1:]
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
    content = _capitalise(content.rstrip(".!…"))
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
