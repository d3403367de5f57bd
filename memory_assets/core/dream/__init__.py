"""The dream, a runner above the tiers: paced consolidation of the daily logs into the vault.

``pacing.py`` decides (from persisted state only) whether to ingest a batch of days, skip a
wedged one, lint, or idle; ``batch.py`` gathers what a run works on (the days' facts, the
confirmations, the revisit queue); a consolidator folds them into pages, either
``rule_consolidator.py`` (the deterministic default) or ``agent.py`` (a chat model's tool loop
confined to the vault by ``vault_tools.py``), as ``consolidator_choice.py`` picks; ``runner.py``
runs it all and owns the watermark, the counters, the hand-off and MEMORY.md promotion
(``promote.py``); ``lint.py`` is the editorial audit; ``dry_run.py`` shows what a run would do on
a clone.
"""
