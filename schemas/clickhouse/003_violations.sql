-- Violations, one row per violation_id = hash(round_id, code, event_id): upserts on redelivery and replay.
CREATE TABLE IF NOT EXISTS violations (
    violation_id  String,
    code          String,
    severity      String,
    table_id      String,
    round_id      String,
    seat          UInt8,
    hand          Int8,
    event_id      String,
    evidence      Array(String),
    citation      String,
    message       String,
    pack          String,
    pack_version  String,
    detected_at   DateTime,
    detected_ms   UInt16
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(detected_at)
ORDER BY (table_id, round_id, violation_id)
