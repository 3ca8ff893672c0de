-- One summary row a round, derived by the audit. version grows as a round is re-derived.
CREATE TABLE IF NOT EXISTS rounds (
    round_id      String,
    table_id      String,
    jurisdiction  String,
    game          String,
    pack          String,
    pack_version  String,
    dealer_id     String,
    seats         Array(UInt8),
    events        UInt32,
    wagered       Int64,
    paid          Int64,
    collected     Int64,
    returned      Int64,
    violations    UInt32,
    complete      UInt8,
    started       DateTime,
    started_ms    UInt16,
    ended         DateTime,
    ended_ms      UInt16
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(started)
ORDER BY (table_id, round_id)
