package demosource

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/daybook-dev/daybook/shared/civil"
)

// weighted is a choice v drawn with relative weight w.
type weighted[T any] struct {
	v T
	w float64
}

// pick draws one of ws by weight.
func pick[T any](r *rand.Rand, ws []weighted[T]) T {
	total := 0.0
	for _, w := range ws {
		total += w.w
	}
	x := r.Float64() * total
	for _, w := range ws {
		if x < w.w {
			return w.v
		}
		x -= w.w
	}
	return ws[len(ws)-1].v
}

// hourWeights is the relative traffic per local hour: quiet at night,
// rising through the morning, peaking mid-afternoon.
var hourWeights = [24]float64{
	0.25, 0.15, 0.10, 0.08, 0.08, 0.12, 0.30, 0.55, 0.80, 1.00, 1.10, 1.20,
	1.25, 1.35, 1.50, 1.60, 1.60, 1.50, 1.30, 1.15, 1.05, 0.90, 0.65, 0.40,
}

// eventMix is the relative frequency of a session's event types after its
// first, which is always a page view (a new user's second event is a signup).
var eventMix = []weighted[string]{
	{"page_view", 48}, {"click", 25}, {"search", 10}, {"add_to_cart", 7}, {"purchase", 3}, {"login", 2},
}

type eventRow struct {
	id, typ                      string
	occurred, received, inserted time.Time
	session, user                any
	value                        any
	cents                        int64 // purchase amount in cents; amount is NULL unless purchase
	test                         bool
	attrs                        any
}

type statKey struct {
	day            string
	metric, dimkey string
}

type stat struct {
	count int64
	sum   float64
}

// gen generates one account.
type gen struct {
	r       *rand.Rand
	t       tenant
	idx     int
	loc     *time.Location
	now     time.Time
	salt    [3]uint64
	seq     [3]uint64
	users   []*user
	stats   map[statKey]*stat
	days    map[string]bool
	events  []eventRow
	perDay  int
	avgSess float64
}

const (
	kindEvent = iota
	kindSession
	kindUser
)

// newID returns prefix + 16 hex digits, unique per kind within the account:
// a counter times an odd constant is a bijection on uint64.
func (g *gen) newID(kind int, prefix string) string {
	g.seq[kind]++
	v := (g.seq[kind] * 0x9E3779B97F4A7C15) ^ g.salt[kind]
	var b [16]byte
	const hexd = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hexd[v&15]
		v >>= 4
	}
	return prefix + string(b[:])
}

// eventID returns a time-ordered id, like the ULID or KSUID keys of real
// event pipelines: "evt_" + 13 hex digits of the unix microsecond it
// happened + 8 hex digits unique per account (the low 32 bits of a counter
// times an odd constant are a bijection).
func (g *gen) eventID(at time.Time) string {
	g.seq[kindEvent]++
	suffix := uint32(g.seq[kindEvent]*0x9E3779B97F4A7C15) ^ uint32(g.salt[kindEvent])
	const hexd = "0123456789abcdef"
	var b [4 + 13 + 8]byte
	copy(b[:], "evt_")
	v := uint64(at.UnixMicro())
	for i := 4 + 12; i >= 4; i-- {
		b[i] = hexd[v&15]
		v >>= 4
	}
	for i := len(b) - 1; i >= 4+13; i-- {
		b[i] = hexd[suffix&15]
		suffix >>= 4
	}
	return string(b[:])
}

func (g *gen) addStat(day, metric, dim string, count int64, sum float64) {
	for _, d := range []string{"", dim} {
		k := statKey{day: day, metric: metric, dimkey: d}
		s := g.stats[k]
		if s == nil {
			s = &stat{}
			g.stats[k] = s
		}
		s.count += count
		s.sum += sum
		if dim == "" {
			break
		}
	}
}

// session-level attribute context.
type sessCtx struct {
	utmSource, campaign string
	store               string
	user                *user
}

func (g *gen) eventAttrs(sc sessCtx, typ string) any {
	r := g.r
	var v any
	switch g.idx {
	case 0:
		if sc.utmSource == "" {
			return nil // direct traffic carries no campaign
		}
		v = struct {
			UTMSource string `json:"utm_source"`
			Campaign  string `json:"campaign"`
		}{sc.utmSource, sc.campaign}
	case 1:
		sku := ""
		if typ == "add_to_cart" || typ == "purchase" || (typ == "page_view" && r.IntN(2) == 0) {
			sku = fmt.Sprintf("SKU-%05d", 10000+r.IntN(2000))
		}
		v = struct {
			StoreID  string `json:"store_id"`
			SKU      string `json:"sku,omitempty"`
			Currency string `json:"currency"`
		}{sc.store, sku, "BRL"}
	case 2:
		if sc.user == nil {
			return nil
		}
		v = struct {
			PlanTier  string `json:"plan_tier"`
			SeatCount int    `json:"seat_count"`
		}{sc.user.tier, sc.user.seats}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// session generates one session starting at start (local day index day).
func (g *gen) session(day int, dayStr string, active []*user) int {
	r := g.r
	start := g.sessionStart(day)
	if start.After(g.now) {
		return 0
	}
	sid := g.newID(kindSession, "ses_")
	var u *user
	signup := false
	switch x := r.Float64(); {
	case x < 0.06:
		u = g.newUser(day)
		signup = true
	case x < 0.68 && len(active) > 0:
		u = active[r.IntN(len(active))]
	}
	sc := sessCtx{user: u}
	switch g.idx {
	case 0:
		src := "direct"
		if u != nil && r.IntN(2) == 0 {
			src = u.utm
		} else {
			src = []string{"google", "google", "newsletter", "twitter", "direct", "direct", "partner"}[r.IntN(7)]
		}
		if src != "direct" {
			sc.utmSource = src
			sc.campaign = []string{"spring_sale", "retargeting", "brand", "launch_week", "weekly_digest"}[r.IntN(5)]
		}
	case 1:
		sc.store = fmt.Sprintf("sp-%02d", 1+r.IntN(8))
		if u != nil && r.IntN(3) > 0 {
			sc.store = u.store
		}
	}
	country := pick(r, g.t.countries)
	if u != nil {
		country = u.country
	}
	test := r.IntN(100) == 0

	n := min(1+int(r.ExpFloat64()*5), 40)
	if signup {
		n = max(n, 2)
	}
	var userID any
	if u != nil {
		userID = u.id
	}
	at := start
	count, last := 0, start
	for i := range n {
		typ := pick(r, eventMix)
		switch {
		case i == 0:
			typ = "page_view"
		case i == 1 && signup:
			typ = "signup"
		case typ == "login" && u == nil:
			typ = "click"
		case typ == "purchase" && u == nil && r.IntN(2) == 0:
			typ = "page_view"
		}
		if i > 0 {
			at = at.Add(time.Duration(3e6+r.ExpFloat64()*45e6) * time.Microsecond)
		}
		if at.After(g.now) {
			break
		}
		ev := eventRow{id: g.eventID(at), typ: typ, occurred: at, session: sid, user: userID, test: test}
		ev.received = at.Add(time.Duration(50_000+r.IntN(2_950_000)) * time.Microsecond)
		if r.IntN(100) < 3 {
			// Late: delivered after the local midnight that ended its day,
			// up to 2 days after it happened (offline devices, retries).
			y, m, d := at.In(g.loc).Date()
			midnight := time.Date(y, m, d+1, 0, 0, 0, 0, g.loc)
			until := midnight.Sub(at)
			ev.received = midnight.Add(time.Minute + time.Duration(r.Int64N(int64(48*time.Hour-until))))
			ev.received = ev.received.Truncate(time.Microsecond)
		}
		ev.inserted = ev.received.Add(time.Duration(100_000+r.IntN(1_900_000)) * time.Microsecond)
		if ev.inserted.After(g.now) {
			continue // not arrived yet at the demo clock
		}
		switch typ {
		case "page_view":
			ev.value = math.Round((1+r.ExpFloat64()*40)*10) / 10
		case "add_to_cart":
			ev.value = float64(1 + r.IntN(3))
		case "purchase":
			ev.value = float64(1 + r.IntN(4))
			ev.cents = g.t.minCents + r.Int64N(g.t.maxCents-g.t.minCents)
			if r.IntN(3) > 0 {
				ev.cents = ev.cents / 100 * 100 // round prices are common
			}
		}
		ev.attrs = g.eventAttrs(sc, typ)
		g.events = append(g.events, ev)
		count++
		last = at
		if u != nil {
			u.acts = append(u.acts, activity{at: at, purchase: typ == "purchase"})
		}
		if !test {
			evDay := civil.In(at, g.loc).String()
			g.days[evDay] = true
			g.addStat(evDay, "events", typ, 1, 1)
			switch typ {
			case "purchase":
				g.addStat(evDay, "revenue", country, 1, float64(ev.cents)/100)
			case "signup":
				g.addStat(evDay, "signups", country, 1, 1)
			}
		}
	}
	if count > 0 && !test {
		g.addStat(dayStr, "sessions", country, 1, last.Sub(start).Seconds())
	}
	return count
}

// sessionStart draws a local start time on day index day following
// hourWeights.
func (g *gen) sessionStart(day int) time.Time {
	r := g.r
	total := 0.0
	for _, w := range hourWeights {
		total += w
	}
	x := r.Float64() * total
	h := 0
	for ; h < 23; h++ {
		if x < hourWeights[h] {
			break
		}
		x -= hourWeights[h]
	}
	d := civil.In(g.now, g.loc).AddDays(day)
	base := time.Date(d.Year, d.Month, d.Day, h, 0, 0, 0, g.loc)
	return base.Add(time.Duration(r.Int64N(int64(time.Hour)))).Truncate(time.Microsecond)
}

// run generates days index -days..0 (0 is today).
func (g *gen) run(ctx context.Context, days int) error {
	// Users who were already customers before the first day of data.
	for range max(3, g.perDay/6) {
		u := g.newUser(-days - 1)
		u.lastDay = -days + int(g.r.ExpFloat64()*10)
	}
	today := civil.In(g.now, g.loc)
	var active []*user
	for day := -days; day <= 0; day++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := today.AddDays(day)
		dayStr := d.String()
		g.days[dayStr] = true
		target := float64(g.perDay) * g.t.scale * (0.9 + 0.2*g.r.Float64())
		if wd := d.Start(time.UTC).Weekday(); wd == time.Saturday || wd == time.Sunday {
			target *= 0.75
		}
		active = active[:0]
		for _, u := range g.users {
			if u.lastDay >= day {
				active = append(active, u)
			}
		}
		// Sessions are drawn for the whole day; those after the clock
		// (today) are dropped, so today holds a partial day.
		sessions := int(math.Round(target / g.avgSess))
		for range sessions {
			g.session(day, dayStr, active)
		}
	}
	return nil
}

func newGen(opts Options, idx int) (*gen, error) {
	t := tenantsFor(opts)[idx]
	loc, err := time.LoadLocation(t.zone)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(opts.Seed, 0xda7b00c0+uint64(idx)))
	g := &gen{r: r, t: t, idx: idx, loc: loc, now: opts.Now, stats: map[statKey]*stat{}, days: map[string]bool{},
		perDay: opts.EventsPerDay, avgSess: 5.9}
	for i := range g.salt {
		g.salt[i] = r.Uint64()
	}
	return g, nil
}
