-- The device key registry the store's events were audited against (pitwatch.registry,
-- docs/events.md "Signed checkpoints"), pinned in the store so that a later audit, the
-- worker, replay, investigate and reaudit that name no registry check signatures
-- against it, and a registry changed under the store is said with both SHA-256s. A row
-- a registry file: `registry` its exact bytes (JSON, UTF-8), `sha256` their SHA-256
-- (hex), `signature` the site key's signature of them (base64; '' for none). The
-- pinned registry is the row of the highest `version` (each pin takes the next); the
-- same file pinned again keeps one row, of its latest version. Only what ClickHouse
-- 18.16 and chDB both run.
CREATE TABLE IF NOT EXISTS key_registry (
    sha256     String,
    version    UInt64,
    registry   String,
    signature  String
) ENGINE = ReplacingMergeTree(version)
ORDER BY sha256
