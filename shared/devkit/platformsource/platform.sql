-- A multi-tenant SaaS schema as a platform writes it, not as daybook's demo
-- does: tenants are organisations (org_id, holding the daybook account id
-- the organisation is registered as), the application stores
-- wall-clock times without a zone (in Europe/Berlin, the platform's home
-- zone), money as numeric(20,10), an enum for the plan, inet for client
-- addresses, jsonb for custom fields, a text[] of labels, and a daily
-- snapshot table of seat counts.

CREATE TYPE plan_tier AS ENUM ('free', 'team', 'enterprise');

CREATE TABLE invoices (
    org_id      text           NOT NULL,
    invoice_id  uuid           NOT NULL,
    created_at  timestamp      NOT NULL,
    amount      numeric(20,10) NOT NULL,
    currency    char(3)        NOT NULL,
    tier        plan_tier      NOT NULL,
    client_ip   inet,
    network     cidr,
    labels      text[],
    line_count  integer        NOT NULL,
    quantity    smallint,
    weight      real,
    paid        boolean        NOT NULL DEFAULT false,
    due_on      date,
    note        varchar(200),
    paid_at     timestamptz,
    attributes  jsonb,
    PRIMARY KEY (org_id, invoice_id)
);
CREATE INDEX invoices_org_created ON invoices (org_id, created_at);
COMMENT ON TABLE invoices IS 'Invoices issued by an organisation.';
COMMENT ON COLUMN invoices.invoice_id IS 'Invoice identifier.';
COMMENT ON COLUMN invoices.created_at IS 'When the invoice was issued.';
COMMENT ON COLUMN invoices.amount IS 'Invoice total, exact.';
COMMENT ON COLUMN invoices.currency IS 'ISO 4217 currency code.';
COMMENT ON COLUMN invoices.client_ip IS 'Address the invoice was created from.';
COMMENT ON COLUMN invoices.labels IS 'Free-form labels.';
COMMENT ON COLUMN invoices.attributes IS 'Custom fields of the organisation.';

CREATE TABLE seat_snapshots (
    org_id        text      NOT NULL,
    snapshot_date date      NOT NULL,
    tier          plan_tier NOT NULL,
    seats         integer   NOT NULL,
    active_seats  bigint    NOT NULL,
    attributes    jsonb,
    PRIMARY KEY (org_id, snapshot_date)
);
COMMENT ON COLUMN seat_snapshots.snapshot_date IS 'Day the snapshot was taken.';
COMMENT ON COLUMN seat_snapshots.seats IS 'Seats paid for.';

-- A dimension table: the organisation's current members, no history. It is
-- delivered as a snapshot: a complete copy of each organisation's rows
-- every day.
CREATE TYPE member_role AS ENUM ('owner', 'admin', 'member');

CREATE TABLE members (
    org_id      text        NOT NULL,
    member_id   uuid        NOT NULL,
    email       text        NOT NULL,
    role        member_role NOT NULL,
    joined_at   timestamp   NOT NULL,
    attributes  jsonb,
    PRIMARY KEY (org_id, member_id)
);
COMMENT ON TABLE members IS 'Members of an organisation, as they are now.';
COMMENT ON COLUMN members.email IS 'Sign-in address.';
