"""The rewrites of lasting instructions to the assistant: one function per rule of
``table.INTERACTION_RULES``.

"Always answer in German", "don't use emojis when you talk to me", "call me Sam": instructions
that set how the assistant behaves from now on become ``interaction`` facts, written from the
assistant's side ("Wants the assistant to answer in German."). One-off requests ("write me a
poem") never reach these rewrites: their patterns ask for a lasting marker (from now on, always,
never, with me, every time) and the pipeline's instruction gate drops everything else.
Pure functions: no state, no I/O.
"""

from __future__ import annotations

import re

from memory_assets.core.write_path.rule_extractor.rewrites import Draft
from memory_assets.core.write_path.rule_extractor.vocabulary import (
    IMPORTANT,
    _capitalise,
    _conjugate,
    _is_vague,
    _third,
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
        return Draft(
            f"Does not want the assistant to {_instruction_body(neg.group('b'))} {lead}",
            "interaction",
            "assistant",
        )
    return Draft(f"Wants the assistant to {_instruction_body(body)} {lead}", "interaction", "assistant")


def _persist_adverb(m: re.Match[str]) -> Draft | None:
    adv = m.group("padv").lower()
    return Draft(
        f"Wants the assistant to {adv} {_instruction_body(m.group('body'))}", "interaction", "assistant"
    )


def _negative_instruction(m: re.Match[str]) -> Draft | None:
    return Draft(
        f"Does not want the assistant to {_instruction_body(m.group('body'))}", "interaction", "assistant"
    )


def _stop_instruction(m: re.Match[str]) -> Draft | None:
    return Draft(
        f"Wants the assistant to stop {_instruction_body(m.group('body'))}", "interaction", "assistant"
    )


def _when_instruction(m: re.Match[str]) -> Draft | None:
    cond = _third(m.group("cond"))
    when = m.group("when").lower()
    return Draft(
        f"Wants the assistant to {_instruction_body(m.group('body'))} {when} they {cond}",
        "interaction",
        "assistant",
    )


def _be_with_me(m: re.Match[str]) -> Draft | None:
    return Draft(f"Wants the assistant to {_instruction_body(m.group('body'))}", "interaction", "assistant")


def _call_me(m: re.Match[str]) -> Draft | None:
    name = m.group("name").strip()
    if _is_vague(name) or len(name.split()) > 4:
        return None
    return Draft(f"Wants to be called {name}", "interaction", "name", IMPORTANT)


def _like_when_you(m: re.Match[str]) -> Draft | None:
    verb = _conjugate(m.group("verb"))
    clause = _third("you " + m.group("rest"), assistant=True).removeprefix("it ")
    return Draft(f"{_capitalise(verb)} it when the assistant {clause}", "interaction", "assistant")


def _want_your(m: re.Match[str]) -> Draft | None:
    verb = {"want": "Wants", "need": "Needs", "like": "Likes", "prefer": "Prefers"}[m.group("verb").lower()]
    return Draft(
        f"{verb} the assistant's {_third(m.group('rest'), assistant=True)}", "interaction", "assistant"
    )
