"""Audits: the dedup measurement and the invariant checks shared by the CLI and the asset checks."""
