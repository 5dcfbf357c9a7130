SELECT profile_id, first_seen_at, last_seen_at, email, country, plan, event_count, attributes, dt
FROM (
    SELECT profile_id, first_seen_at, last_seen_at, email, country, plan, event_count, attributes, dt,
        ROW_NUMBER() OVER (PARTITION BY profile_id ORDER BY last_seen_at DESC, dt DESC) AS daybook_rn
    FROM profiles
) AS daybook_latest
WHERE daybook_rn = 1;
