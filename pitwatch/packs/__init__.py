"""Rule packs: one per jurisdiction and game, each a versioned list of checks with their
codes, severities and citations (`registry.select` picks one for a table)."""
