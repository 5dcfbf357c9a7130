package publicschemas

import (
	"fmt"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// Basejump is a Supabase SaaS starter: uuid account ids as the tenants, a
// schema of its own, enums, jsonb metadata, text primary keys, nullable
// timestamptz.
func Basejump() Schema {
	return Schema{
		Name: "basejump", Title: "Basejump, a multi-tenant Supabase starter (usebasejump/basejump, MIT)",
		PGSchema: "basejump", AccountZone: "Asia/Kolkata",
		Tenants: []string{"5e1b4a2c-7d3f-4b8e-9a01-2c3d4e5f6a7b", "0f0e0d0c-0b0a-4909-8807-060504030201", "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"},
		Inits: [][]string{
			{"--tenant-column", "account_id", "--table", "basejump.billing_subscriptions", "--partition-column", "created"},
			{"--tenant-column", "account_id", "--table", "basejump.invitations", "--partition-column", "created_at"},
			{"--tenant-column", "account_id", "--table", "basejump.billing_customers", "--partition", "snapshot"},
			{"--tenant-column", "id", "--table", "basejump.accounts", "--partition", "snapshot"},
		},
		generate: genBasejump,
	}
}

var (
	statuses = []string{"trialing", "active", "canceled", "incomplete", "incomplete_expired", "past_due", "unpaid"}
	metadata = []JSON{`{"plan": "pro", "seats": 5}`, `{"coupon": null, "tags": ["a", "b"]}`, `{"ü": {"deep": [true, false]}}`}
)

func genBasejump(g *gen, days []civil.Date) {
	first := days[0].Start(g.loc)
	for i, a := range g.s.Tenants {
		g.add("accounts", Row{"id": a, "primary_owner_user_id": g.uuid(), "name": g.maybe(4, pick(g, texts...)), "slug": fmt.Sprintf("team-%d", i),
			"personal_account": false, "updated_at": g.maybe(3, first.Add(-time.Duration(i)*time.Hour)), "created_at": first.Add(-90 * 24 * time.Hour),
			"created_by": g.uuid(), "updated_by": g.maybe(2, g.uuid()), "private_metadata": pick(g, metadata...), "public_metadata": g.maybe(3, JSON(`{}`))})
		g.add("billing_customers", Row{"account_id": a, "id": fmt.Sprintf("cus_%d%s", i, "QWERTY"), "email": g.maybe(3, fmt.Sprintf("billing%d@example.com", i)),
			"active": g.maybe(4, i != 1), "provider": "stripe"})
	}
	sub, inv := 0, 0
	for _, day := range days {
		for i, a := range g.s.Tenants {
			for _, t := range g.instants(day, 5) {
				sub++
				g.add("billing_subscriptions", Row{"id": fmt.Sprintf("sub_%05d", sub), "account_id": a, "billing_customer_id": fmt.Sprintf("cus_%d%s", i, "QWERTY"),
					"status": g.maybe(5, pick(g, statuses...)), "metadata": g.maybe(3, pick(g, metadata...)), "price_id": g.maybe(4, "price_1"),
					"plan_name": pick(g, "Pro", "Team ✓", ""), "quantity": g.maybe(3, g.r.Int64N(100)), "cancel_at_period_end": g.maybe(4, g.r.IntN(2) == 0),
					"created": t, "current_period_start": t, "current_period_end": t.AddDate(0, 1, 0), "ended_at": g.maybe(2, t.Add(time.Hour)),
					"cancel_at": g.maybe(2, t.Add(2*time.Hour)), "canceled_at": g.maybe(2, t.Add(3*time.Hour)), "trial_start": g.maybe(2, t),
					"trial_end": g.maybe(2, t.AddDate(0, 0, 14)), "provider": g.maybe(5, "stripe")})
			}
			for k, t := range g.instants(day, 3) {
				inv++
				var created any = t
				if k == 1 && day == days[1] {
					created = nil // an invitation without a creation time is in no day
				}
				g.add("invitations", Row{"id": g.uuid(), "account_role": pick(g, "owner", "member"), "account_id": a, "token": fmt.Sprintf("tok_%06d", inv),
					"invited_by_user_id": g.uuid(), "account_name": g.maybe(3, pick(g, texts...)), "updated_at": g.maybe(3, t.Add(time.Minute)),
					"created_at": created, "invitation_type": pick(g, "one_time", "24_hour")})
			}
		}
	}
}
