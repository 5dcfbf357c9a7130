// Package demosource generates the demo SQLite source that `make demo` and
// the end-to-end test export (SPEC X2): three accounts with opaque ids, a
// couple of weeks of events, an activity feed of profiles and pre-aggregated
// daily statistics, in the tables of dataset.SourceDDL("sqlite").
//
// Generation is deterministic: the same Options (seed, clock, sizes) give
// the same account ids and the same rows, inserted in the same order.
//
// The data has realistic shapes so the exported files are worth looking at:
//
//   - events: sessions of several events by identified users or anonymous
//     visitors, more in the afternoon and fewer at night in the account's
//     time zone, fewer on weekends; a handful of event types (page_view,
//     click, search, add_to_cart, purchase, signup, login); value only on
//     page_view (engaged seconds), add_to_cart and purchase (quantity);
//     amount only on purchase; about 1% of sessions flagged is_test; about
//     3% of events arrive late (inserted on a later day than they occurred,
//     up to 2 days late; a late event whose arrival is after the demo clock
//     has not arrived yet and is not in the source); per-tenant attributes
//     that differ by account.
//   - profiles: the source table is profile_activity, an activity feed (SPEC
//     D4): one row per identified user and local day (account zone) on which
//     that user has events in the source, holding the profile's state as of
//     its last event that day: last_seen_at is that event, first_seen_at the
//     user's first event ever, event_count the user's events up to
//     last_seen_at, and plan the plan then (in the web analytics account a
//     "free" user's first purchase upgrades them to "plus" from that event
//     on). So a profile appears in every partition it was active in, and an
//     old day's rows do not change with later activity. Users churn, so
//     their last active days spread over the whole range.
//   - daily_stats: per account and local day (for every day that has data,
//     today included as a running partial), computed from the non-test
//     events of the source: events (total and per event_type; sum = count),
//     sessions (total and per country, by session start day; sum = session
//     duration in seconds), revenue (total and per country; count =
//     purchases, sum = amount) and signups (total and per country; sum =
//     count). The total is the row with dimension "".
package demosource

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// Defaults applied by Generate to zero Options fields.
const (
	DefaultDays         = 14
	DefaultEventsPerDay = 3000
	// DefaultSettleDelay is the settle delay written into every demo account.
	DefaultSettleDelay = 2 * time.Hour
	// Region of every demo bucket.
	Region = "us-east-1"
	// BucketPrefix is the name of demo account n's bucket without n; the
	// template's direct-write pattern is daybook-exports-*.
	BucketPrefix = "daybook-exports-demo-"
	// RoleARN3 and ExternalID3 are the role demo account 3 is reached through.
	RoleARN3    = "arn:aws:iam::123456789012:role/daybook-export-demo3"
	ExternalID3 = "demo-external-id-3"
)

// Options configures Generate.
type Options struct {
	// Path is the SQLite file to create; an existing file is replaced.
	Path string
	// Now is the demo's clock: the last instant with data, and the "today"
	// of every account. Zero means time.Now().
	Now time.Time
	// Days of data before today, in each account's zone (today is extra).
	// Zero means DefaultDays.
	Days int
	// EventsPerDay per account on an average weekday. Zero means
	// DefaultEventsPerDay; the end-to-end test uses about 100.
	EventsPerDay int
	// Seed of every random choice, account ids included (ids depend on the
	// seed only, not on the sizes).
	Seed uint64
	// Stage is the deployment stage the accounts' prefixes are rendered
	// for (Demo.Destinations); it is not written into the source.
	Stage string
	// AccountIDs, if set, replace the generated ids of the first accounts,
	// in order (the local stack's fixed, documented account id).
	AccountIDs []string
}

// Demo is what Generate produced.
type Demo struct {
	// Accounts are the three demo accounts, in order (demo 1, 2, 3), as
	// `daybook account put --file` takes them.
	Accounts []account.Account
	// Path is the SQLite file.
	Path string
	// Stage is Options.Stage.
	Stage string
	// Now is the demo clock the data was generated for.
	Now time.Time
	// Rows are the source row counts per partition: account id → dataset →
	// day (YYYY-MM-DD) → rows the dataset's sqlite query returns for that
	// day's window (account.Window). Every day from the account's start date
	// through today (in its zone) is present, zero-row days included; today
	// is never exported, but its rows are in the source.
	Rows map[string]map[string]map[string]int64
}

// profile of one demo account: everything that differs between tenants.
type tenant struct {
	name        string
	zone        string
	format      string
	compression string
	roleARN     string
	externalID  string
	scale       float64 // volume relative to EventsPerDay
	currency    string
	countries   []weighted[string]
	plans       []string          // nil: the plan column stays NULL
	upgrades    map[string]string // plan → plan a purchase moves the user to
	minCents    int64
	maxCents    int64
}

type weighted[T any] struct {
	v T
	w float64
}

var tenants = []tenant{
	{
		name: "Demo web analytics", zone: "UTC",
		format: account.FormatParquet, compression: account.CompressionSnappy,
		scale: 1.0, currency: "USD", minCents: 5_00, maxCents: 400_00,
		countries: []weighted[string]{{"US", 45}, {"GB", 15}, {"CA", 10}, {"DE", 10}, {"FR", 8}, {"AU", 7}, {"NL", 5}},
		plans:     []string{"free", "free", "free", "plus"},
		upgrades:  map[string]string{"free": "plus"},
	},
	{
		name: "Demo e-commerce BR", zone: "America/Sao_Paulo",
		format: account.FormatNDJSON, compression: account.CompressionGzip,
		scale: 0.85, currency: "BRL", minCents: 19_90, maxCents: 1500_00,
		countries: []weighted[string]{{"BR", 85}, {"AR", 6}, {"PT", 5}, {"UY", 4}},
	},
	{
		name: "Demo SaaS IN", zone: "Asia/Kolkata",
		format: account.FormatParquet, compression: account.CompressionZstd,
		roleARN: RoleARN3, externalID: ExternalID3,
		scale: 1.15, currency: "INR", minCents: 499_00, maxCents: 49_999_00,
		countries: []weighted[string]{{"IN", 80}, {"SG", 6}, {"AE", 6}, {"US", 5}, {"GB", 3}},
		plans:     []string{"free", "free", "pro", "pro", "enterprise"},
	},
}

// hourWeights is the relative traffic per local hour: quiet at night,
// rising through the morning, peaking mid-afternoon.
var hourWeights = [24]float64{
	0.25, 0.15, 0.10, 0.08, 0.08, 0.12, 0.30, 0.55, 0.80, 1.00, 1.10, 1.20,
	1.25, 1.35, 1.50, 1.60, 1.60, 1.50, 1.30, 1.15, 1.05, 0.90, 0.65, 0.40,
}

// Generate creates (or replaces) the SQLite file at opts.Path and fills it.
// The file is written under a temporary name and renamed into place, so a
// reader never sees a half-written source.
func Generate(ctx context.Context, opts Options) (*Demo, error) {
	if opts.Path == "" {
		return nil, errors.New("demosource: empty path")
	}
	if opts.Days < 0 || opts.EventsPerDay < 0 {
		return nil, fmt.Errorf("demosource: days %d and events per day %d must not be negative", opts.Days, opts.EventsPerDay)
	}
	if opts.Days == 0 {
		opts.Days = DefaultDays
	}
	if opts.EventsPerDay == 0 {
		opts.EventsPerDay = DefaultEventsPerDay
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	opts.Now = opts.Now.UTC().Truncate(time.Microsecond)

	accts, err := demoAccounts(opts)
	if err != nil {
		return nil, err
	}

	dir := filepath.Dir(opts.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(opts.Path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmpPath)
			os.Remove(tmpPath + "-journal")
		}
	}()

	rows, err := fill(ctx, tmpPath, opts, accts)
	if err != nil {
		return nil, err
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if err := os.Remove(opts.Path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("demosource: remove stale %s: %w", opts.Path+suffix, err)
		}
	}
	if err := os.Rename(tmpPath, opts.Path); err != nil {
		return nil, fmt.Errorf("demosource: %w", err)
	}
	ok = true
	return &Demo{Accounts: accts, Path: opts.Path, Stage: opts.Stage, Now: opts.Now, Rows: rows}, nil
}

// demoAccounts returns the three accounts; their ids come from a stream
// seeded by opts.Seed alone.
func demoAccounts(opts Options) ([]account.Account, error) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], opts.Seed)
	copy(seed[8:], "daybook demo account ids")
	ids := rand.NewChaCha8(seed)
	names, err := dataset.Names()
	if err != nil {
		return nil, err
	}
	settle := account.Duration(DefaultSettleDelay)
	out := make([]account.Account, len(tenants))
	for i, t := range tenants {
		id, err := account.NewID(ids)
		if err != nil {
			return nil, err
		}
		if i < len(opts.AccountIDs) {
			id = opts.AccountIDs[i] // the generated id is still drawn, so the others do not change
		}
		loc, err := time.LoadLocation(t.zone)
		if err != nil {
			return nil, fmt.Errorf("demosource: time zone %s: %w", t.zone, err)
		}
		today := civil.In(opts.Now, loc)
		start := today.AddDays(-opts.Days)
		if i == 0 {
			// A backfill horizon before the first day of data: the early
			// days export as valid empty partitions (E6).
			start = today.AddDays(-max(30, opts.Days+16))
		}
		s := settle
		a := account.Account{
			ID:          id,
			Name:        t.name,
			Enabled:     true,
			StartDate:   start,
			TimeZone:    t.zone,
			SettleDelay: &s,
			Datasets:    append([]string(nil), names...),
			Destination: account.Destination{
				Bucket:      BucketPrefix + strconv.Itoa(i+1),
				Region:      Region,
				Prefix:      account.DefaultPrefix,
				RoleARN:     t.roleARN,
				ExternalID:  t.externalID,
				Format:      t.format,
				Compression: t.compression,
			},
			CreatedAt: opts.Now.Truncate(time.Second),
		}
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("demosource: account %d: %w", i+1, err)
		}
		out[i] = a
	}
	return out, nil
}

// WriteAccountFiles writes account-<n>.json (n = 1, 2, 3) into dir in the
// `daybook account put --file` format and returns their paths.
func (d *Demo) WriteAccountFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(d.Accounts))
	for i, a := range d.Accounts {
		b, err := json.MarshalIndent(a, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("demosource: account %s: %w", a.ID, err)
		}
		p := filepath.Join(dir, "account-"+strconv.Itoa(i+1)+".json")
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Destinations returns, per account, where its files land:
// s3://<bucket>/<rendered prefix>/v1/ for d.Stage.
func (d *Demo) Destinations() ([]string, error) {
	out := make([]string, 0, len(d.Accounts))
	for _, a := range d.Accounts {
		p, err := a.Prefix(d.Stage)
		if err != nil {
			return nil, err
		}
		out = append(out, "s3://"+a.Destination.Bucket+"/"+p+"/"+layout.Version+"/")
	}
	return out, nil
}

// --- generation ----------------------------------------------------------------

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

var eventMix = []weighted[string]{
	{"page_view", 48}, {"click", 25}, {"search", 10}, {"add_to_cart", 7}, {"purchase", 3}, {"login", 2},
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
	t := tenants[idx]
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

// fill creates the schema at path, inserts every account's rows in one
// transaction and counts the partitions.
func fill(ctx context.Context, path string, opts Options, accts []account.Account) (map[string]map[string]map[string]int64, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, fmt.Errorf("demosource: open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ddl, err := dataset.SourceDDL(dataset.DialectSQLite)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; PRAGMA cache_size=-131072"); err != nil {
		return nil, fmt.Errorf("demosource: pragmas: %w", err)
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("demosource: create tables: %w", err)
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ins, err := prepare(ctx, tx)
	if err != nil {
		return nil, err
	}
	defer ins.close()
	for i, a := range accts {
		g, err := newGen(opts, i)
		if err != nil {
			return nil, err
		}
		if err := g.run(ctx, opts.Days); err != nil {
			return nil, err
		}
		if err := ins.write(ctx, a.ID, g); err != nil {
			return nil, fmt.Errorf("demosource: account %s: %w", a.ID, err)
		}
	}
	ins.close()
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("demosource: commit: %w", err)
	}
	rows, err := countRows(ctx, db, accts, opts.Now)
	if err != nil {
		return nil, err
	}
	return rows, db.Close()
}

// eventBatch is how many events one INSERT statement carries: fewer
// statement executions make the bulk load about twice as fast.
const eventBatch = 64

const eventCols = 12

type inserter struct {
	events, eventsOne, profiles, stats *sql.Stmt
	args                               []any
}

func prepare(ctx context.Context, tx *sql.Tx) (*inserter, error) {
	ins := inserter{args: make([]any, 0, eventBatch*eventCols)}
	values := func(n int) string {
		one := "(?" + strings.Repeat(",?", eventCols-1) + ")"
		return strings.TrimSuffix(strings.Repeat(one+",", n), ",")
	}
	const eventsInsert = `INSERT INTO events (account_id, event_id, event_type, occurred_at, received_at,
		inserted_at, session_id, user_id, value, amount, is_test, attributes) VALUES `
	var err error
	if ins.events, err = tx.PrepareContext(ctx, eventsInsert+values(eventBatch)); err != nil {
		return nil, err
	}
	if ins.eventsOne, err = tx.PrepareContext(ctx, eventsInsert+values(1)); err != nil {
		ins.close()
		return nil, err
	}
	if ins.profiles, err = tx.PrepareContext(ctx, `INSERT INTO profile_activity (account_id, profile_id, activity_date,
		first_seen_at, last_seen_at, email, country, plan, event_count, attributes) VALUES (?,?,?,?,?,?,?,?,?,?)`); err != nil {
		ins.close()
		return nil, err
	}
	if ins.stats, err = tx.PrepareContext(ctx, `INSERT INTO daily_stats (account_id, stat_date, metric, dimension,
		count, sum, attributes) VALUES (?,?,?,?,?,?,?)`); err != nil {
		ins.close()
		return nil, err
	}
	return &ins, nil
}

func (ins *inserter) close() {
	for _, s := range []**sql.Stmt{&ins.events, &ins.eventsOne, &ins.profiles, &ins.stats} {
		if *s != nil {
			(*s).Close()
			*s = nil
		}
	}
}

func (ins *inserter) write(ctx context.Context, acct string, g *gen) error {
	// In occurred_at order (the ids sort by time): both indexes then grow
	// at their end, which keeps the bulk load fast.
	sort.Slice(g.events, func(i, j int) bool { return g.events[i].id < g.events[j].id })
	for _, e := range g.events {
		var amount any
		if e.typ == "purchase" {
			amount = dataset.NewDecimal(e.cents, 2).String()
		}
		test := 0
		if e.test {
			test = 1
		}
		ins.args = append(ins.args, acct, e.id, e.typ, dataset.FormatTimestamp(e.occurred),
			dataset.FormatTimestamp(e.received), dataset.FormatTimestamp(e.inserted), e.session, e.user,
			e.value, amount, test, e.attrs)
		if len(ins.args) == eventBatch*eventCols {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := ins.events.ExecContext(ctx, ins.args...); err != nil {
				return fmt.Errorf("insert events up to %s: %w", e.id, err)
			}
			ins.args = ins.args[:0]
		}
	}
	// The remainder, one row at a time.
	for off := 0; off < len(ins.args); off += eventCols {
		if _, err := ins.eventsOne.ExecContext(ctx, ins.args[off:off+eventCols]...); err != nil {
			return fmt.Errorf("insert event %s: %w", ins.args[off+1], err)
		}
	}
	ins.args = ins.args[:0]
	for _, p := range g.profileActivity() {
		if _, err := ins.profiles.ExecContext(ctx, acct, p.user.id, p.day, dataset.FormatTimestamp(p.first),
			dataset.FormatTimestamp(p.last), p.user.email, p.user.country, p.plan, p.events, p.user.attrs); err != nil {
			return fmt.Errorf("insert profile_activity %s %s: %w", p.user.id, p.day, err)
		}
	}
	keys := make([]statKey, 0, len(g.stats))
	for k := range g.stats {
		keys = append(keys, k)
	}
	// Every day with data has its totals, zero included.
	for day := range g.days {
		for _, m := range []string{"events", "sessions", "revenue", "signups"} {
			k := statKey{day: day, metric: m}
			if g.stats[k] == nil {
				g.stats[k] = &stat{}
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.day != b.day {
			return a.day < b.day
		}
		if a.metric != b.metric {
			return a.metric < b.metric
		}
		return a.dimkey < b.dimkey
	})
	currency := `{"currency":"` + g.t.currency + `"}`
	for _, k := range keys {
		s := g.stats[k]
		var attrs any
		if k.metric == "revenue" {
			attrs = currency
		}
		sum := s.sum
		if k.metric == "revenue" {
			sum = math.Round(sum*100) / 100
		} else if k.metric == "sessions" {
			sum = math.Round(sum*1e6) / 1e6
		}
		if _, err := ins.stats.ExecContext(ctx, acct, k.day, k.metric, k.dimkey, s.count, sum, attrs); err != nil {
			return fmt.Errorf("insert daily_stats %s %s %q: %w", k.day, k.metric, k.dimkey, err)
		}
	}
	return nil
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

// countRows runs each dataset's own sqlite query, wrapped in a count, over
// each account's day windows from its start date through today, binding
// the parameters the way the SQL source does.
func countRows(ctx context.Context, db *sql.DB, accts []account.Account, now time.Time) (map[string]map[string]map[string]int64, error) {
	cat, err := dataset.Catalog()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]map[string]int64{}
	for _, a := range accts {
		loc, err := a.Location()
		if err != nil {
			return nil, err
		}
		out[a.ID] = map[string]map[string]int64{}
		for _, ds := range cat {
			q, err := ds.Query(dataset.DialectSQLite)
			if err != nil {
				return nil, err
			}
			stmt, err := db.PrepareContext(ctx, "SELECT count(*) FROM ("+q+")")
			if err != nil {
				return nil, fmt.Errorf("demosource: count %s: %w", ds.Name, err)
			}
			m := map[string]int64{}
			for _, day := range civil.Range(a.StartDate, civil.In(now, loc)) {
				args := WindowParams(a, ds, day)
				var n int64
				if err := stmt.QueryRowContext(ctx, args...).Scan(&n); err != nil {
					stmt.Close()
					return nil, fmt.Errorf("demosource: count %s %s: %w", ds.Name, day, err)
				}
				m[day.String()] = n
			}
			stmt.Close()
			out[a.ID][ds.Name] = m
		}
	}
	return out, nil
}

// WindowParams returns the (account, start, end) values the sqlite query of
// ds binds for day, as shared/source binds them: the account's day window
// as canonical timestamp text, or the calendar days for stat_date datasets.
func WindowParams(a account.Account, ds dataset.Dataset, day civil.Date) []any {
	if ds.Partition == dataset.PartitionStatDate {
		return []any{a.ID, day.String(), day.AddDays(1).String()}
	}
	start, end := a.Window(day)
	return []any{a.ID, dataset.FormatTimestamp(start), dataset.FormatTimestamp(end)}
}
