"""How well a row's words match a query's: BM25 with the query's candidates as the collection.

Search scores every candidate on both legs (design §5.7). The full-text term of that score is
computed here, from the candidates' own text, and not taken from LanceDB's ``_score``:

* LanceDB scores a row with the statistics of the full-text index as it was last built: rows added
  since the last optimize are counted only for themselves, deleted rows are still counted, and a
  row looked up under an id filter while it is not yet indexed is scored over the filtered rows
  alone. A row's score would then
  depend on whether an optimize has run, which it must not (design §7).
* Computed over the candidates, a row's lexical score depends only on the query, its text and the
  other candidates' text: the same before and after any optimize, and without another query for
  the rows only the vector leg found.

The collection is the candidate pool, so the inverse document frequency says how rare a query
word is among the rows in contention: a name every candidate carries counts for little, the one
word that tells the answer apart counts for much. Tokens are words in lower case with a crude
stem (``text.stem``), English stop words and question words left out; numbers count, except in a
question that names a date window, whose date words are the date term's (``DATE_WORDS``). The score is
Okapi BM25 (k1 = 1.2, b = 0.75), with the idf that never goes negative,
``ln(1 + (N - n + 0.5) / (n + 0.5))``.
"""

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memory_assets.core.text import stem

K1 = 1.2
B = 0.75
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
STOP_WORDS = frozenset(
    {
        *("a", "an", "the", "to", "of", "in", "on", "at", "for", "from", "with", "by", "about", "as"),
        *("into", "onto", "over", "and", "or", "but", "than", "then", "so", "if", "is", "are", "am"),
        *("was", "were", "be", "been", "being", "do", "does", "did", "doing", "done", "has", "have"),
        *("had", "having", "will", "would", "shall", "should", "can", "could", "may", "might", "must"),
        *("i", "me", "my", "mine", "myself", "you", "your", "yours", "he", "him", "his", "she", "her"),
        *("hers", "it", "its", "we", "us", "our", "they", "them", "their", "theirs", "what", "when"),
        *("where", "which", "who", "whom", "whose", "why", "how", "this", "that", "these", "those"),
        *("there", "here", "not", "no", "any", "some", "all", "just", "also", "very", "much", "s", "t"),
    }
)


# Words that name a date ("in July", "last Monday", "3 days ago"). When the question names a date
# window, the date term of the score accounts for them (``query_dates.py``): as words they would
# only reward every fact that mentions some July.
DATE_WORDS = frozenset(
    {
        *("january", "february", "march", "april", "may", "june", "july", "august", "september"),
        *("october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep"),
        *("sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday"),
        *("saturday", "sunday", "today", "yesterday", "tomorrow", "tonight", "day", "days", "week"),
        *("weeks", "weekend", "month", "months", "year", "years", "ago", "last", "next", "past", "since"),
        *("between", "during", "earlier", "later"),
    }
)


@lru_cache(maxsize=16384)
def tokens(text: str) -> tuple[str, ...]:
    """The words of ``text`` as the lexical score compares them (cached: a process searching one
    table meets the same rows again and again)."""
    return tuple(_stem(w) for w in _TOKEN.findall(text.lower()) if w not in STOP_WORDS)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return stem(word)


class Lexical:
    """BM25 for one query over the collection ``pool`` (the query's candidates, in order);
    ``pool_scores`` holds each pool text's score, in the same order."""

    def __init__(self, query: str, pool: Iterable[str], dated: bool = False) -> None:
        """``dated``: the question names a date window, so its date words are left out."""
        words = _TOKEN.findall(query.lower())
        if dated:
            words = [w for w in words if w not in DATE_WORDS and not w.isdigit() and not _ORDINAL.match(w)]
        self.terms = frozenset(_stem(w) for w in words if w not in STOP_WORDS)
        docs = [tokens(text) for text in pool]
        n = len(docs)
        df = Counter(t for doc in docs for t in set(doc) if t in self.terms)
        self.idf = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in self.terms}
        self.mean_length = (sum(len(d) for d in docs) / n) if n else 1.0
        self.pool_scores = [self._bm25(d) for d in docs]
        self.best = max(self.pool_scores, default=0.0)

    def score(self, text: str) -> float:
        """The BM25 score of ``text``, in the pool or not (0 when it shares no word with the query)."""
        return self._bm25(tokens(text)) if self.terms else 0.0

    def fraction(self, score: float) -> float:
        """``score`` over the pool's best, at most 1 (a text outside the pool may score higher)."""
        return min(score / self.best, 1.0) if self.best > 0 else 0.0

    def _bm25(self, doc: Sequence[str]) -> float:
        counts = Counter(t for t in doc if t in self.terms)
        if not counts:
            return 0.0
        norm = K1 * (1.0 - B + B * len(doc) / (self.mean_length or 1.0))
        return sum(self.idf[t] * f * (K1 + 1.0) / (f + norm) for t, f in counts.items())
