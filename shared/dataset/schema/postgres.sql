-- Source tables the shipped dataset queries read (PostgreSQL / Aurora).

CREATE TABLE IF NOT EXISTS events (
    account_id  text          NOT NULL,
    event_id    text          NOT NULL,
    event_type  text          NOT NULL,
    occurred_at timestamptz   NOT NULL, -- when it happened: decides the partition
    received_at timestamptz   NOT NULL,
    inserted_at timestamptz   NOT NULL DEFAULT now(), -- later than occurred_at for late events
    session_id  text,
    user_id     text,
    value       double precision,
    amount      numeric(18,2),
    is_test     boolean       NOT NULL DEFAULT false,
    attributes  jsonb,
    PRIMARY KEY (account_id, event_id)
);
CREATE INDEX IF NOT EXISTS events_account_occurred ON events (account_id, occurred_at);

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
--     last_seen_at = greatest(profile_activity.last_seen_at, excluded.last_seen_at), ...
CREATE TABLE IF NOT EXISTS profile_activity (
    account_id    text        NOT NULL,
    profile_id    text        NOT NULL,
    activity_date date        NOT NULL, -- day active, in the account's time zone
    first_seen_at timestamptz NOT NULL, -- first activity ever
    last_seen_at  timestamptz NOT NULL, -- last activity on activity_date: decides the partition
    email         text,
    country       text,
    plan          text,
    event_count   bigint      NOT NULL DEFAULT 0, -- events up to last_seen_at
    attributes    jsonb,
    PRIMARY KEY (account_id, profile_id, activity_date),
    CHECK (first_seen_at <= last_seen_at)
);
CREATE INDEX IF NOT EXISTS profile_activity_account_last_seen ON profile_activity (account_id, last_seen_at, profile_id);

CREATE TABLE IF NOT EXISTS daily_stats (
    account_id text             NOT NULL,
    stat_date  date             NOT NULL,
    metric     text             NOT NULL,
    dimension  text             NOT NULL DEFAULT '',
    count      bigint           NOT NULL,
    sum        double precision NOT NULL,
    attributes jsonb,
    PRIMARY KEY (account_id, stat_date, metric, dimension)
);
