-- Source tables the shipped dataset queries read (demo SQLite source).
-- Instants are TEXT in one fixed-width UTC form, 'YYYY-MM-DDTHH:MM:SS.ffffffZ'
-- (always six fractional digits), so that range predicates compare them
-- correctly as strings and the SQL source binds the day window the same way.
-- Days are TEXT 'YYYY-MM-DD'. Money is TEXT so it stays exact (REAL would
-- round). JSON is TEXT holding one JSON value. Booleans are INTEGER 0/1.

CREATE TABLE IF NOT EXISTS events (
    account_id  TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    event_type  TEXT    NOT NULL,
    occurred_at TEXT    NOT NULL, -- when it happened: decides the partition
    received_at TEXT    NOT NULL, -- when the platform received it
    inserted_at TEXT    NOT NULL, -- when it reached this table; later than occurred_at for late events
    session_id  TEXT,
    user_id     TEXT,
    value       REAL,
    amount      TEXT,
    is_test     INTEGER NOT NULL DEFAULT 0,
    attributes  TEXT,
    PRIMARY KEY (account_id, event_id)
);
CREATE INDEX IF NOT EXISTS events_account_occurred ON events (account_id, occurred_at);

CREATE TABLE IF NOT EXISTS profiles (
    account_id    TEXT    NOT NULL,
    profile_id    TEXT    NOT NULL,
    first_seen_at TEXT    NOT NULL,
    last_seen_at  TEXT    NOT NULL, -- latest activity: decides the partition
    email         TEXT,
    country       TEXT,
    plan          TEXT,
    event_count   INTEGER NOT NULL DEFAULT 0,
    attributes    TEXT,
    PRIMARY KEY (account_id, profile_id)
);
CREATE INDEX IF NOT EXISTS profiles_account_last_seen ON profiles (account_id, last_seen_at);

CREATE TABLE IF NOT EXISTS daily_stats (
    account_id TEXT    NOT NULL,
    stat_date  TEXT    NOT NULL,
    metric     TEXT    NOT NULL,
    dimension  TEXT    NOT NULL DEFAULT '',
    count      INTEGER NOT NULL,
    sum        REAL    NOT NULL,
    attributes TEXT,
    PRIMARY KEY (account_id, stat_date, metric, dimension)
);
