-- Console sessions (pitwatch serve), shared by every console process over the store: a
-- user logged in at one process is the same user at the next behind a load balancer,
-- and a logout at any of them ends the session at all. The session token itself is
-- never stored: `token_sha256` is the hex SHA-256 of the cookie's token, so a reader of
-- the store cannot take over a session. Append-only: a login, a renewal of the idle
-- expiry and a logout each append a row; a session's state is its row of the highest
-- `version` (ms on the console's clock, UTC), which the merges keep. `via` is how the
-- user logged in: password or oidc. `expires` ends it unless it is used again (each use
-- moves it on); `revoked` 1 is a logout. Only what ClickHouse 18.16 and chDB both run.
CREATE TABLE IF NOT EXISTS console_sessions (
    token_sha256  String,
    version       UInt64,
    user          String,
    role          String,
    via           String,
    expires       DateTime,
    revoked       UInt8,
    ts            DateTime
) ENGINE = ReplacingMergeTree(version)
ORDER BY token_sha256
