"""A runner: erase, a person's right to have their words removed from a home (design §5.11).

Forget (``core/reconcile.py``) hides a text from everything that is served and keeps the markdown's
history; erase removes the bytes, irreversibly, from every file of the home and every retained
version of the index, leaving a keyed hash where something must still recognise the text. The
request and what it reaches (``scope.py``), how a text is found inside longer text
(``cut.py``), the rewrite of each kind of file (``rewrite.py``), the crash-safe journal
(``journal.py``), the receipt (``receipt.py``) and the whole run (``runner.py``).
"""

from memory_assets.core.erase.runner import erase, resume
from memory_assets.core.erase.scope import EraseError

__all__ = ["EraseError", "erase", "resume"]
