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
-- The export query's index: it covers the query (every selected column is
-- in it, so SQLite never reads the table) and its order (account, then
-- occurred_at, event_id: no sort step).
DROP INDEX IF EXISTS events_account_occurred;
CREATE INDEX IF NOT EXISTS events_export ON events (account_id, occurred_at, event_id,
    event_type, received_at, session_id, user_id, value, amount, is_test, attributes);

-- Profile activity (D4, partition "activity"): one row per profile per
-- day it was active, not one row per profile. The source application upserts
-- the row of (account, profile, day) on every activity of that profile, so
-- the row holds the profile's state as of its last activity that day:
--   last_seen_at  its last activity within activity_date;
--   first_seen_at its first activity ever;
--   event_count   its events so far, up to last_seen_at;
--   email, country, plan, attributes as they were then.
-- activity_date is the day in the account's time zone, the same zone daybook
-- windows the partition by, so every row's last_seen_at lies inside its own
-- day's window and the profiles partition of day D is a plain range scan on
-- last_seen_at: each profile active on D once, with its day-D state. Rows of
-- past days are not touched by later activity, which lands in a row of its
-- own day, so re-exporting an old day returns the same rows (a late event
-- for an old day updates that day's row, as it changes that day's events).
-- The upsert, per activity at instant T on local day D:
--   INSERT INTO profile_activity (...) VALUES (..., D, <first seen>, T, ...)
--   ON CONFLICT (account_id, profile_id, activity_date) DO UPDATE SET
--     last_seen_at = max(last_seen_at, excluded.last_seen_at), event_count = ..., ...
CREATE TABLE IF NOT EXISTS profile_activity (
    account_id    TEXT    NOT NULL,
    profile_id    TEXT    NOT NULL,
    activity_date TEXT    NOT NULL, -- day active, in the account's time zone
    first_seen_at TEXT    NOT NULL, -- first activity ever
    last_seen_at  TEXT    NOT NULL, -- last activity on activity_date: decides the partition
    email         TEXT,
    country       TEXT,
    plan          TEXT,
    event_count   INTEGER NOT NULL DEFAULT 0, -- events up to last_seen_at
    attributes    TEXT,
    PRIMARY KEY (account_id, profile_id, activity_date),
    CHECK (first_seen_at <= last_seen_at)
);
CREATE INDEX IF NOT EXISTS profile_activity_account_last_seen ON profile_activity (account_id, last_seen_at, profile_id);

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
