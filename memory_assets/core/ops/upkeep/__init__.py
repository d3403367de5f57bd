"""A home's daily upkeep, and many homes' upkeep in one process (design §11.4, §11.6).

A user's day of upkeep is well under a second of work: the transcripts the write path is behind
on, the index's catch-up for files the memory service did not index, the dream (its own pacing
decides), the reconcile after it (or for a hand-off a dream outside left), the day's dedup
measurement, and an optimize. Run as Dagster runs of their own, each user paid a process, the
imports and the model's load several times a day for it. Here the same work is one call per home
and one loop over many homes, so a batch of users is one process with one model:

* ``look.py``: ``look_at``, what one home needs (``Look``), found from its files and persisted
  state; ``look_state.py``: what a planner keeps of a home between looks, at the root;
  ``plan.py``: ``Planner``, the homes under a root as the planner sees them;
* ``work.py``: ``Work``, what a planner found due for a home (hints: every step asks again, under
  the user's exclusion, whether it still has anything to do), and the dedup measurement's rule;
* ``exclusion.py``: the user's exclusion, which a batch and a per-user run both take, so they
  never work on one home at once; a batch tries it once and skips a held user, never waiting;
* ``home_upkeep.py``: ``upkeep_home``, the steps in order, each one's failure recorded and the
  later steps still tried where they do not depend on it;
* ``outcomes.py``: each user's last upkeep outcome at the root, and when a failed user is due
  again (the backoff);
* ``batch.py``: ``run_batch``, the users of a batch one after another under their exclusions,
  one user's failure never stopping the rest;
* ``one_home.py``: one home's look and upkeep asked for by a person (``memory-assets upkeep``).
* ``served_table.py``: ``ServedTable``, one home's table kept within bounds by the process that
  writes it all day (the memory service's lane): when it is due an optimize, the optimize and the
  prune after it.

Every step is one the runners already make crash safe per home (the dream commits once, the
reconcile truncates its hand-off last, a reindex is a diff), so a batch killed part-way leaves
each home consistent, and what it did not reach is still due: the next batch finds it.
"""
