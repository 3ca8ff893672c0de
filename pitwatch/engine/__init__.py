"""The rules engine: a round's state as a fold over its events (`state`), rule packs of
small checks (`rulepack`), violations (`violation`) and the per-table auditor
(`auditor`). No clock, randomness or I/O in here."""
