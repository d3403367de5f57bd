"""The agent consolidator: a chat model folds a batch into the vault through confined file tools.

Selected by ``MEMORY_DREAM_CONSOLIDATOR=agent`` (``consolidator_choice.make_consolidator``); the rule-based
consolidator stays the default. ``AgentConsolidator.consolidate`` runs a tool-calling loop over the
OpenAI chat-completions protocol (``ChatClient.chat_tools``): the system prompt states the vault's
rules, the first user message carries the batch (its log facts, the confirmations, the revisit
queue, bounded in size; the rest of a large batch is paged with the ``batch_facts`` tool), and
every ``tool_calls`` entry is answered by a ``role: tool`` message. The model's first answer
without tool calls ends the run, and its text is the summary.

The tools are ``VaultTools`` (``vault_tools.py``): files inside the vault only, never the daily
logs, ``log.md`` or ``.state/``. The agent writes no hand-off file either: ``retire`` collects the
log facts it folded, and the runner writes ``superseded.txt`` from ``ConsolidationResult.folded``.

Bounds: at most ``settings.dream_agent_max_steps`` model calls and ``settings.dream_timeout_s``
seconds for the whole run (each model call gets what is left of it). Running out of either, or a
model call that fails, raises ``AgentConsolidatorError``; the runner counts a failed attempt. A
failed run first rolls back the pages it wrote, so a retry starts from the same vault (a page
someone else changed meanwhile is left alone).

What the result reports: ``pages_changed`` (the pages whose bytes the run changed), ``folded`` (the
retired facts, each one of the batch's), ``summary``, ``revisited`` (revisit-queue pages the run
wrote) and ``warnings`` (each refused or failed tool call). ``outcomes`` stays empty and
``confirmations_folded`` 0: the model does not report per-claim outcomes reliably, and a count it
made up would be worse than none.
"""

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memory_assets.core.dream.consolidator import Batch, BatchFact, ConsolidationResult
from memory_assets.core.dream.vault_tools import ERROR_PREFIX, VaultTools
from memory_assets.core.knowledge.categories import CATEGORIES, GENERAL
from memory_assets.core.models.language_model import AssistantMessage, ChatClient, LanguageModelError
from memory_assets.core.settings import Settings

if TYPE_CHECKING:
    from memory_assets.core.models.embedder import TextEmbedder

MAX_FACT_CHARS = 60_000  # the batch's facts in the first message; the rest is paged by batch_facts
MAX_PAGE_FACT_CHARS = 20_000  # one batch_facts answer
MAX_CONFIRMATION_CHARS = 12_000
MAX_TOOL_CALLS_PER_STEP = 16  # further calls in one answer are refused, not run
MAX_SUMMARY_CHARS = 1_500
MAX_WARNINGS = 50
_THINK_RE = re.compile(r"<think>.*?</think>|<details data-reasoning=\"true\">.*?</details>", re.DOTALL | re.I)

BATCH_FACTS_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "batch_facts",
        "description": "List this batch's log facts from a given number on (when the first message "
        "could not hold them all).",
        "parameters": {
            "type": "object",
            "properties": {"start": {"type": "integer", "description": "The first fact's number (1-based)."}},
            "required": ["start"],
            "additionalProperties": False,
        },
    },
}


def _stale_rules() -> str:
    labels = []
    for c in CATEGORIES:
        days = c.stale_after_days
        labels.append(f"{c.name}: {'never' if days is None else f'+{days} days'}")
    return "; ".join(labels) + f"; an unknown category: +{GENERAL.stale_after_days} days"


SYSTEM_PROMPT = f"""You maintain the long-term memory of an AI assistant. Facts extracted from \
conversations pile up in append-only daily logs; your job is to fold them into a vault of markdown \
pages where each claim about the user lives exactly once, with its history and how often it has \
been confirmed.

You act only through your tools, and they reach only the vault. Every path is relative to the \
vault root (for example 3_Personal/Preferences.md). The daily logs, the vault's log.md (the \
runner's record of what has been consolidated) and the hidden .state/ folder belong to the runner: \
you cannot reach them, and you never need to. The log facts you work on are in the user message.

The vault:
- schema.md: the vault's conventions. Read it before writing anything and follow it; where it is \
silent, these rules apply.
- index.md: a map of the vault's pages. Add a line for every page you create.
- 3_Personal/: claims about the user, one page per kind of claim (category), one bullet per claim.
- 2_Wiki/ (Concepts, Literature, Syntheses, Entities): knowledge that is not about the user.
- 1_Projects/: the user's ongoing projects. 0_Inbox/, 4_Assets/ (never modify), 5_Archives/.

A 3_Personal/ page starts with YAML frontmatter: type, title, category, status (draft, stable or \
deprecated), updated (today, YYYY-MM-DD) and stale_after, which follows the page's category, \
counted from updated: {_stale_rules()}. Keep every other field a page already has.

Each claim is one bullet, ending with its confirmation marker:
  - Prefers metric units in every answer. (confirmed 3x, last 2026-08-20)
No marker means confirmed once. Never write a second bullet for a claim a page already holds.

For every log fact, find where it belongs (glob, grep and memory_search before creating a page), \
then apply exactly one outcome:
1. confirm: it restates a claim already held. Add one to the count and set last to the fact's date.
2. sharpen: it says the same claim more precisely, without contradicting it. Replace the wording \
with the sharper one and keep the count.
3. supersede: it changes the claim (a new value for the same thing). Rewrite the bullet as \
"Currently X (since DATE); previously Y." and reset the count to 1.
4. add: it is new. Add a bullet (count 1) on the right page.
A fact that contradicts a claim is never a confirmation, however similar it sounds: a reversal \
must not count as evidence for what it reverses. Write relative dates ("last month") as absolute \
dates. Never delete a claim: deprecate or supersede it.

After folding a log fact into a page (any of the four outcomes), call retire with the fact's text \
exactly as the batch lists it. Retire nothing else: not a fact you left out, not a confirmation, \
not page text.

Confirmations are restatements the write path recognised without logging them: add each one's \
count to the matched claim's marker. Revisit pages are past their stale_after, or have none: check \
their claims against this batch, update what the batch confirms or changes, give the page its \
stale_after, and delete nothing.

Keep pages tidy: update a page rather than creating a near-duplicate, and link related pages under \
a "## Related" heading. When you are done, answer with one short paragraph summarising what you \
changed, and call no more tools."""


def _fact_line(number: int, fact: BatchFact) -> str:
    tags = f" `{' '.join(fact.tags)}`" if fact.tags else ""
    return f"{number}. [{fact.day.isoformat()}] [{fact.category}] {fact.content}{tags}"


def _facts_block(facts: Sequence[BatchFact], start: int, limit: int) -> tuple[list[str], int]:
    """Fact lines from ``start`` (0-based) within ``limit`` characters (at least one), and where
    they stop."""
    lines: list[str] = []
    used = 0
    index = start
    while index < len(facts):
        line = _fact_line(index + 1, facts[index])
        if lines and used + len(line) + 1 > limit:
            break
        lines.append(line)
        used += len(line) + 1
        index += 1
    return lines, index


def _confirmations_block(batch: Batch) -> list[str]:
    """One line per matched claim: how many restatements, and the latest."""
    counts: Counter[tuple[str, str]] = Counter()
    last: dict[tuple[str, str], str] = {}
    for c in batch.confirmations:
        key = (c.matched, c.source_file or c.source_type)
        counts[key] += 1
        last[key] = max(last.get(key, ""), c.ts[:10])
    lines: list[str] = []
    used = 0
    for (matched, where), count in counts.most_common():
        line = f'- "{matched}" ({where}): restated {count}x, last {last[(matched, where)]}'
        if used + len(line) > MAX_CONFIRMATION_CHARS:
            lines.append(f"- ... and {len(counts) - len(lines)} more claims (they will come again next run)")
            break
        lines.append(line)
        used += len(line) + 1
    return lines


def build_first_message(batch: Batch) -> tuple[str, int]:
    """The first user message, and how many of the batch's facts it lists."""
    days = batch.days
    span = f"{days[0].isoformat()} to {days[-1].isoformat()}" if days else "(no days)"
    lines, shown = _facts_block(batch.facts, 0, MAX_FACT_CHARS)
    parts = [
        f"Today is {batch.today.isoformat()}. Consolidate the daily logs of {span} into the vault.",
        "",
        f"## Log facts ({len(batch.facts)}): [log date] [category] text `tags`",
        *(lines or ["(none)"]),
    ]
    if shown < len(batch.facts):
        parts.append(
            f"[facts {shown + 1}-{len(batch.facts)} are not listed here: call batch_facts with "
            f"start={shown + 1} to read them]"
        )
    parts += ["", f"## Confirmations ({len(batch.confirmations)} restatements)"]
    parts += _confirmations_block(batch) or ["(none)"]
    parts += ["", "## Revisit queue"]
    parts += [f"- {page}" for page in batch.revisit] or ["(none)"]
    parts += [
        "",
        "## Steps",
        "1. Read schema.md and index.md, and glob the vault (3_Personal/*.md first).",
        "2. For each log fact: find its page, apply one outcome (confirm, sharpen, supersede, add), "
        "then retire the fact.",
        "3. Fold the confirmations into their claims' markers; revisit the queued pages.",
        "4. Update index.md and Related links. Then answer with a one-paragraph summary.",
    ]
    return "\n".join(parts), shown


class AgentConsolidatorError(RuntimeError):
    """The agent's run failed (its limits, the model); the runner counts a failed attempt."""


class AgentConsolidator:
    """A ``Consolidator`` driven by a chat model with tools. ``settings`` gives the bounds
    (``dream_agent_max_steps``, ``dream_timeout_s``); ``consolidate``'s settings give the vault.
    ``embedder`` (optional) serves the memory_search tool; by default it comes from the settings."""

    def __init__(
        self,
        client: ChatClient,
        settings: Settings,
        *,
        embedder: "TextEmbedder | None" = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.settings = settings
        self.name = f"agent:{client.model}"
        self.max_steps = max(1, int(settings.dream_agent_max_steps))
        self.timeout_s = float(settings.dream_timeout_s)
        self.embedder = embedder
        self.clock = clock

    def consolidate(self, settings: Settings, batch: Batch) -> ConsolidationResult:
        tools = VaultTools(
            settings, facts=[f.content for f in batch.facts], embedder=self.embedder, journal=batch.journal
        )
        try:
            summary = self._run(tools, batch)
        except BaseException as exc:  # a failed run leaves the vault as it found it
            try:
                for warning in tools.rollback():
                    exc.add_note(warning)
            except OSError as rollback_error:
                exc.add_note(f"rolling back the pages written failed: {rollback_error}")
            raise
        if not summary:
            summary = (
                f"The agent changed {len(tools.written)} page(s) and retired {len(tools.retired)} fact(s)."
            )
        warnings = [f"agent tool error: {e}" for e in tools.errors[:MAX_WARNINGS]]
        if len(tools.errors) > MAX_WARNINGS:
            warnings.append(f"... and {len(tools.errors) - MAX_WARNINGS} more agent tool errors")
        return ConsolidationResult(
            pages_changed=list(tools.written),
            folded=list(tools.retired),
            revisited=[page for page in batch.revisit if page in tools.written],
            warnings=warnings,
            summary=summary,
        )

    # -- the loop ----------------------------------------------------------------------------------
    def _run(self, tools: VaultTools, batch: Batch) -> str:
        started = self.clock()
        deadline = started + self.timeout_s
        first, _ = build_first_message(batch)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": first},
        ]
        definitions = [*tools.definitions(), BATCH_FACTS_TOOL]
        for step in range(1, self.max_steps + 1):
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise self._out_of_time(step - 1, tools)
            try:
                reply = self.client.chat_tools(messages, definitions, timeout=remaining)
            except LanguageModelError as exc:
                if self.clock() >= deadline - 0.05:
                    raise self._out_of_time(step - 1, tools) from exc
                raise AgentConsolidatorError(f"dream agent: model call {step} failed: {exc}") from exc
            if not reply.tool_calls:
                return _summary(reply)
            if step == self.max_steps:
                break  # its calls are not run: the run fails, and rolls back
            messages.append(reply.to_message())
            for index, call in enumerate(reply.tool_calls):
                if index >= MAX_TOOL_CALLS_PER_STEP:
                    answer = (
                        f"{ERROR_PREFIX}not run: at most {MAX_TOOL_CALLS_PER_STEP} tool calls per answer; "
                        "call it again"
                    )
                elif call.name == "batch_facts":
                    answer = self._batch_facts(batch, call.arguments)
                else:
                    answer = tools.call(call.name, call.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": answer})
        raise AgentConsolidatorError(
            f"dream agent: still calling tools after {self.max_steps} model calls, the limit "
            f"(MEMORY_DREAM_AGENT_MAX_STEPS); {_progress(tools)}. The run counts as failed; raise the "
            "limit if a batch needs more steps, or lower MEMORY_DREAM_MAX_DAYS"
        )

    def _out_of_time(self, calls: int, tools: VaultTools) -> AgentConsolidatorError:
        return AgentConsolidatorError(
            f"dream agent: ran out of its {self.timeout_s:g} s time limit (MEMORY_DREAM_TIMEOUT_S) after "
            f"{calls} completed model call(s); {_progress(tools)}. The run counts as failed; raise the "
            "limit, use a faster model, or lower MEMORY_DREAM_MAX_DAYS"
        )

    @staticmethod
    def _batch_facts(batch: Batch, arguments: str) -> str:
        try:
            data = json.loads(arguments or "{}")
            start = int(data.get("start", 1)) if isinstance(data, Mapping) else 1
        except (ValueError, TypeError):
            return f'{ERROR_PREFIX}the arguments must be a JSON object like {{"start": 1}}'
        if not 1 <= start <= max(1, len(batch.facts)):
            return f"{ERROR_PREFIX}start must be between 1 and {len(batch.facts)}"
        lines, stop = _facts_block(batch.facts, start - 1, MAX_PAGE_FACT_CHARS)
        more = f"\n[call batch_facts with start={stop + 1} for the rest]" if stop < len(batch.facts) else ""
        return "\n".join(lines or ["(none)"]) + more


def _summary(reply: AssistantMessage) -> str:
    text = _THINK_RE.sub("", reply.content or "").strip()
    return text if len(text) <= MAX_SUMMARY_CHARS else text[: MAX_SUMMARY_CHARS - 1] + "…"


def _progress(tools: VaultTools) -> str:
    return f"{len(tools.written)} page(s) written (rolled back) and {len(tools.retired)} fact(s) retired"
