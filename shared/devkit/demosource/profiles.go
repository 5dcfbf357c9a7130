package demosource

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

type user struct {
	id      string
	country string
	email   any // string or nil
	plan    any // string or nil
	attrs   string
	tier    string
	seats   int
	utm     string
	store   string
	lastDay int // last day index the user is active (churn)
	// acts are the user's events in the source, in generation order.
	acts []activity
}

// activity is one event of an identified user, as profile_activity sees it.
type activity struct {
	at       time.Time
	purchase bool
}

func (g *gen) newUser(day int) *user {
	r := g.r
	u := &user{id: g.newID(kindUser, "usr_"), country: pick(r, g.t.countries)}
	// Churn: active for an exponentially distributed number of days.
	u.lastDay = day + int(r.ExpFloat64()*9)
	if r.IntN(100) < 85 {
		domain := []string{"example.com", "example.org", "example.net"}[r.IntN(3)]
		u.email = "user." + u.id[len(u.id)-8:] + "@" + domain
	}
	if g.t.plans != nil {
		u.plan = g.t.plans[r.IntN(len(g.t.plans))]
	}
	var attrs any
	switch g.idx {
	case 0:
		u.utm = []string{"google", "newsletter", "twitter", "direct", "partner"}[r.IntN(5)]
		attrs = struct {
			FirstUTMSource string `json:"first_utm_source"`
			Newsletter     bool   `json:"newsletter"`
		}{u.utm, r.IntN(3) == 0}
	case 1:
		u.store = fmt.Sprintf("sp-%02d", 1+r.IntN(8))
		attrs = struct {
			FavoriteStore string `json:"favorite_store"`
			LoyaltyMember bool   `json:"loyalty_member"`
		}{u.store, r.IntN(4) == 0}
	case 2:
		u.tier = "free"
		if p, ok := u.plan.(string); ok {
			u.tier = p
		}
		u.seats = 1
		switch u.tier {
		case "pro":
			u.seats = 2 + r.IntN(18)
		case "enterprise":
			u.seats = 25 + r.IntN(475)
		}
		attrs = struct {
			PlanTier  string `json:"plan_tier"`
			SeatCount int    `json:"seat_count"`
		}{u.tier, u.seats}
	}
	b, _ := json.Marshal(attrs)
	u.attrs = string(b)
	g.users = append(g.users, u)
	return u
}

// profileDay is one profile_activity row: a user's state as of its last
// event on one local day.
type profileDay struct {
	user        *user
	day         string
	first, last time.Time
	events      int64
	plan        any
}

// profileActivity folds every user's events, in time order, into one row
// per (user, local day with events), as the source application's upsert
// would: the row of a day is its state after that day's last event. Rows
// come sorted by last_seen_at, then profile id (the order of the index).
func (g *gen) profileActivity() []profileDay {
	var out []profileDay
	for _, u := range g.users {
		if len(u.acts) == 0 {
			continue // never seen in the source: no profile
		}
		acts := append([]activity(nil), u.acts...)
		sort.SliceStable(acts, func(i, j int) bool { return acts[i].at.Before(acts[j].at) })
		plan := u.plan
		var cur *profileDay
		for n, a := range acts {
			day := civil.In(a.at, g.loc).String()
			if cur == nil || cur.day != day {
				out = append(out, profileDay{user: u, day: day, first: acts[0].at})
				cur = &out[len(out)-1]
			}
			if p, ok := plan.(string); ok && a.purchase && g.t.upgrades[p] != "" {
				plan = g.t.upgrades[p]
			}
			cur.last, cur.events, cur.plan = a.at, int64(n+1), plan
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].last.Equal(out[j].last) {
			return out[i].last.Before(out[j].last)
		}
		return out[i].user.id < out[j].user.id
	})
	return out
}
