"""The rule tables: which clause shapes the extractor knows, in the order they are tried.

A rule is ``(name, anchored pattern, rewrite)``. The first rule whose pattern matches a clause
*and* whose rewrite returns a draft wins, so order matters: the specific shapes ("I'm allergic
to", "I'm <nationality>") come before the general ones ("I'm a", "I <verb>"). Patterns run on the
canonical clause ("I am" -> "I'm", "I've got" -> "I have", "don't" -> "do not", a leading
"we"/"our" -> "I"/"my"), case-insensitively unless a rule needs the case (a name's capital).

``INTERACTION_RULES`` (lasting instructions to the assistant) are tried before the pipeline's
instruction gate, since they are instructions too; ``STATEMENT_RULES`` (statements about the
user) after it. ``RULES`` is both, in that order.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memory_assets.core.write_path.rule_extractor.instruction_rewrites import (
    _be_with_me,
    _call_me,
    _like_when_you,
    _negative_instruction,
    _persist_adverb,
    _persist_lead,
    _stop_instruction,
    _want_your,
    _when_instruction,
)
from memory_assets.core.write_path.rule_extractor.rewrites import (
    Draft,
    _can,
    _cannot,
    _goal,
    _habit,
    _have,
    _have_perfect,
    _have_to,
    _home_is,
    _im_a,
    _im_age,
    _im_allergic,
    _im_based,
    _im_fan,
    _im_from,
    _im_language,
    _im_name,
    _im_nationality,
    _im_on,
    _im_person,
    _im_place,
    _im_progressive,
    _im_skill,
    _im_state,
    _im_tall,
    _is_my,
    _my_name,
    _my_thing,
    _negated,
    _rather,
    _relative,
    _relative_and_i,
    _relative_name,
    _used_to,
    _was,
)
from memory_assets.core.write_path.rule_extractor.vocabulary import ADV_RE, NATIONALITY_RE, REL_RE, STATE_RE

RuleFn = Callable[[re.Match[str]], Draft | None]

_PERSIST_LEAD = r"(?P<lead>(?:please |pls |and )?(?:from now on|in (?:the )?future|going forward|from here on(?: out)?|by default|for all (?:future )?(?:chats|conversations|answers))),?\s+"
_INSTRUCT_VERB = (
    r"(?:answer|reply|respond|use|keep|give|write|explain|be|call|address|cite|include|add|avoid|stop|"
    r"talk|speak|show|format|list|ask|remind|tell|check|suggest|recommend|mention|assume|put|make|start|"
    r"end|sign|refer|translate|double-check|summari[sz]e|correct|spell|stick|skip|leave|open|treat|"
    r"provide|send|focus|limit|avoid|quote|link|write|respect|warn|let|go)"
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
