"""The knowledge tier: the vault, its lifecycle rules, log.md (the watermark) and the tombstones."""
