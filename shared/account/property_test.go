package account

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/fileformat"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// gen makes random accounts from a seeded source: few buckets, endpoints,
// segments and roles, and templates that name earlier accounts' ids, so that
// collisions and nesting are common.
type gen struct {
	src *rand.ChaCha8 // ids
	r   *rand.Rand    // choices, from the same source
	ids []string
	// rendered are earlier accounts' rendered prefixes, to build on.
	rendered []string
}

// stores maps each endpoint the generator uses to the store it is, written
// out by hand as the oracle for Destination.store.
var stores = map[string]string{
	"":                              "aws",
	"https://minio.example.com":     "minio",
	"https://minio.example.com:443": "minio",
	"https://minio.example.com/":    "minio",
	"https://r2.example.com":        "r2",
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) segments(n int) []string {
	var out []string
	for range g.r.IntN(n + 1) {
		seg := g.pick("daybook", "x", "exports", "{{.Stage}}", "prod", "a", "b", "lit")
		if seg == "lit" && len(g.ids) > 0 {
			// Another account's id, or one that only starts with it.
			seg = g.ids[g.r.IntN(len(g.ids))] + g.pick("", "", "x", "-1")
		} else if seg == "lit" {
			seg = "a"
		}
		out = append(out, seg)
	}
	return out
}

func (g *gen) prefix() string {
	if g.r.IntN(6) == 0 {
		return "" // DefaultPrefix
	}
	if len(g.rendered) > 0 && g.r.IntN(3) == 0 {
		// Under an earlier account's prefix, beside it (its last segment
		// extended: a string prefix but not a segment one), or above it.
		base := g.rendered[g.r.IntN(len(g.rendered))]
		switch g.r.IntN(3) {
		case 1:
			base += g.pick("x", "-1")
		case 2:
			if i := strings.LastIndexByte(base, '/'); i > 0 {
				base = base[:i]
			}
		}
		return base + "/" + layout.PlaceholderAccountID
	}
	segs := append(g.segments(3), layout.PlaceholderAccountID)
	return strings.Join(append(segs, g.segments(2)...), "/")
}

func (g *gen) account(t *testing.T) Account {
	id, err := NewID(g.src)
	if err != nil {
		t.Fatal(err)
	}
	g.ids = append(g.ids, id)
	names := datasettest.Example(t).Names()
	var ds []string
	for _, n := range names {
		if g.r.IntN(2) == 0 {
			ds = append(ds, n)
		}
	}
	if len(ds) == 0 {
		ds = names[:1]
	}
	a := Account{ID: id, Enabled: g.r.IntN(4) > 0, StartDate: civil.MustParse("2026-01-01"), Datasets: ds,
		Destination: Destination{
			Bucket:   g.pick("shared", "shared", "other"),
			Endpoint: g.pick(slices.Collect(mapsKeys(stores))...),
			Prefix:   g.prefix(),
			Format:   fileformat.Format(g.pick("parquet", "ndjson")),
		}}
	if p, err := a.Prefix("prod"); err == nil {
		g.rendered = append(g.rendered, p)
	}
	if g.r.IntN(2) == 0 {
		a.Destination.RoleARN = g.pick("arn:aws:iam::123456789012:role/daybook-export-a", "arn:aws:iam::123456789012:role/DAYBOOK-EXPORT-A",
			"arn:aws:iam::210987654321:role/daybook-export-b")
		a.Destination.ExternalID = g.pick("ext-1", "ext-2", fmt.Sprint("ext-", g.r.IntN(1000)))
	}
	return a
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic order for the seeded picks
	return slices.Values(keys)
}

// keys returns every key the exporter and the delivery code write for a,
// through the layout key functions.
func keys(t *testing.T, a Account, stage string) (string, []string) {
	prefix := prefixOf(t, a, stage)
	var out []string
	for _, day := range []civil.Date{civil.MustParse("2026-01-01"), civil.MustParse("2026-12-31")} {
		out = append(out, layout.DeliveryManifestKey(prefix, day))
		for _, ds := range a.Datasets {
			for _, n := range []int{0, 1, 99999} {
				for _, f := range fileformat.Formats() {
					out = append(out, layout.DataKey(prefix, ds, day, n, f.Extension()))
				}
			}
			out = append(out, layout.ManifestKey(prefix, ds, day), layout.SuccessKey(prefix, ds, day))
			for _, e := range loadsql.Engines {
				out = append(out, layout.LoadKey(prefix, ds, day, e))
			}
			out = append(out, layout.SchemaKey(prefix, ds))
		}
	}
	return prefix, append(out, layout.ReadmeKey(prefix))
}

func prefixOf(t *testing.T, a Account, stage string) string {
	p, err := a.Prefix(stage)
	if err != nil {
		t.Fatalf("account %s: prefix: %v", a.ID, err)
	}
	return p
}

// under is the oracle for layout.Within: string prefix on whole segments.
func under(key, prefix string) bool {
	key, prefix = strings.TrimSuffix(key, "/"), strings.TrimSuffix(prefix, "/")
	return key == prefix || strings.HasPrefix(key, prefix+"/")
}

// TestIsolationProperty: for random valid accounts (seeded, so a failure
// repeats), every key daybook writes for an account is under its own
// rendered prefix, has its id as a segment and fits S3's limit; accounts
// accepted one after another by CheckIsolation never share a prefix
// (equal or nested) in one bucket of one store, nor a role and external id;
// and CheckIsolation refuses exactly the candidates the oracle says
// conflict.
func TestIsolationProperty(t *testing.T) {
	t.Parallel()
	const stage = "prod"
	rules := testRules
	rules.RolePattern = "arn:aws:iam::*:role/*" // let role names differing in case through, to isolation
	var accepted, refused, updates int
	for seed := range uint64(25) {
		src := rand.NewChaCha8([32]byte{byte(seed), 'p', 'r', 'o', 'p'})
		g := &gen{src: src, r: rand.New(src)}
		var saved []Account
		for range 60 {
			cand := g.account(t)
			if len(saved) > 0 && g.r.IntN(8) == 0 { // an update of a saved account
				old := saved[g.r.IntN(len(saved))]
				g.ids = g.ids[:len(g.ids)-1]
				cand.ID = old.ID
				updates++
			}
			if err := cand.Validate(datasettest.Example(t), rules); err != nil {
				continue
			}
			prefix, ks := keys(t, cand, stage)
			for _, k := range ks {
				if !under(k, prefix) || !slices.Contains(strings.Split(k, "/"), cand.ID) || len(k) > layout.MaxKeyBytes {
					t.Fatalf("seed %d: key %q of %s is not under its prefix %q with its id, within %d bytes", seed, k, cand.ID, prefix, layout.MaxKeyBytes)
				}
			}
			conflict := oracleConflict(t, cand, saved, stage)
			err := CheckIsolation(cand, saved, stage)
			if (err != nil) != (conflict != "") {
				t.Fatalf("seed %d: CheckIsolation(%s %+v) = %v; the oracle says %q", seed, cand.ID, cand.Destination, err, conflict)
			}
			if err != nil {
				refused++
				continue
			}
			accepted++
			if i := slices.IndexFunc(saved, func(o Account) bool { return o.ID == cand.ID }); i >= 0 {
				saved[i] = cand
			} else {
				saved = append(saved, cand)
			}
		}
		checkPairwise(t, seed, saved, stage)
	}
	// The generator must exercise both outcomes, or this test proves nothing.
	if accepted < 200 || refused < 100 || updates < 50 {
		t.Errorf("accepted %d, refused %d, updates %d: the generator no longer makes enough of each", accepted, refused, updates)
	}
}

// oracleConflict says, independently of CheckIsolation, why cand conflicts
// with a saved account ("" if it does not).
func oracleConflict(t *testing.T, cand Account, saved []Account, stage string) string {
	mine := prefixOf(t, cand, stage)
	for _, o := range saved {
		if o.ID == cand.ID {
			continue
		}
		theirs := prefixOf(t, o, stage)
		cd, od := cand.Destination, o.Destination
		if stores[cd.Endpoint] == stores[od.Endpoint] && cd.Bucket == od.Bucket && (under(mine, theirs) || under(theirs, mine)) {
			return "prefix of " + o.ID
		}
		if cd.RoleARN != "" && strings.EqualFold(cd.RoleARN, od.RoleARN) && cd.ExternalID == od.ExternalID {
			return "role of " + o.ID
		}
	}
	return ""
}

// checkPairwise: no key of one saved account lies under another's prefix in
// the same bucket of the same store, and no two share role and external id.
func checkPairwise(t *testing.T, seed uint64, saved []Account, stage string) {
	all := make([][]string, len(saved))
	for i, a := range saved {
		_, all[i] = keys(t, a, stage)
	}
	for i, a := range saved {
		for j, b := range saved {
			if i == j {
				continue
			}
			ad, bd := a.Destination, b.Destination
			if stores[ad.Endpoint] == stores[bd.Endpoint] && ad.Bucket == bd.Bucket {
				bp := prefixOf(t, b, stage)
				for _, k := range all[i] {
					if under(k, bp) {
						t.Fatalf("seed %d: key %q of %s is under %s's prefix %q in bucket %s", seed, k, a.ID, b.ID, bp, ad.Bucket)
					}
				}
			}
			if ad.RoleARN != "" && strings.EqualFold(ad.RoleARN, bd.RoleARN) && ad.ExternalID == bd.ExternalID {
				t.Fatalf("seed %d: %s and %s share role %s and external id %s", seed, a.ID, b.ID, ad.RoleARN, ad.ExternalID)
			}
		}
	}
}
