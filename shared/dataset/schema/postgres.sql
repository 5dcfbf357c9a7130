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

CREATE TABLE IF NOT EXISTS profiles (
    account_id    text        NOT NULL,
    profile_id    text        NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL, -- latest activity: decides the partition
    email         text,
    country       text,
    plan          text,
    event_count   bigint      NOT NULL DEFAULT 0,
    attributes    jsonb,
    PRIMARY KEY (account_id, profile_id)
);
CREATE INDEX IF NOT EXISTS profiles_account_last_seen ON profiles (account_id, last_seen_at);

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
