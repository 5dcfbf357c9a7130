package account

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// Isolation as a property of the table (C4). CheckIsolation compares an
// account with a list of the others, and a list read before a write can be
// stale by the time of the write: two accounts saved at once could both pass
// and nest. So every account also holds guards, items of its own that the
// ledger writes in the same transaction as the account, each conditional on
// nobody else holding it in a conflicting way:
//
//   - for its (place, rendered prefix), the prefix itself, held as
//     GuardOwn: nobody else may own it or be below it;
//   - for every ancestor of the prefix (a, a/b for a/b/c), held as
//     GuardUnder: nobody may own it, though any number of accounts may be
//     below it;
//   - for a role, the (role ARN lowercased, external id) pair, held as
//     GuardOwn;
//   - for its tenant key (Tenant: tenant_key, else the id), the key's
//     identity (dataset.TenantIdentity: "0007", "+7" and "7" are one, and
//     so are a uuid in upper and lower case), held as GuardOwn on every
//     source shard at once, as CheckIsolation compares it.
//
// Two accounts whose prefixes are equal both want GuardOwn of one item; if
// one is inside the other, the inner one wants GuardUnder of the item the
// outer one owns. Either way the two transactions touch one item and its
// condition lets only one of them hold it. Two accounts of one tenant both
// want GuardOwn of the tenant's item.
//
// Guards is the one function that says which items an account holds: the
// ledger's save path writes them, and a migration that gives accounts
// saved before a kind of guard existed their missing items computes them
// with it too.

// Hold is how an account holds a guard.
type Hold string

// The holds.
const (
	GuardOwn   Hold = "own"
	GuardUnder Hold = "under"
)

// GuardTenant begins the key of a tenant key's guard.
const GuardTenant = "t#"

// Guard is one item an account holds.
type Guard struct {
	// Key identifies the guarded thing: "p#" (prefix), "r#" (role) or "t#"
	// (tenant key) and a SHA-256 of what it names (a prefix may be longer
	// than a DynamoDB sort key).
	Key  string
	Hold Hold
	// Field and Value are what a conflict on it is reported as
	// (destination.prefix and the rendered prefix, destination.external_id,
	// or tenant_key and the key), Desc the guarded thing in words.
	Field, Value, Desc string
}

// Guards returns the guards a (a saved account, valid) holds in stage,
// ordered by key. The error names the prefix when it cannot be rendered.
func (a Account) Guards(stage string) ([]Guard, error) {
	tmpl := cmp.Or(a.Destination.Prefix, DefaultPrefix)
	prefix, err := layout.RenderPrefix(tmpl, a.Vars(stage))
	if err != nil {
		return nil, &FieldError{Field: "destination.prefix", Value: tmpl, Reason: reason(err)}
	}
	d := a.Destination
	place := d.Place()
	segs := layout.Segments(prefix)
	var out []Guard
	for i := range segs {
		p := strings.Join(segs[:i+1], "/")
		hold := GuardUnder
		if i == len(segs)-1 {
			hold = GuardOwn
		}
		out = append(out, Guard{
			Key: "p#" + digest(place.Namespace, place.Bucket, p), Hold: hold,
			Field: "destination.prefix", Value: prefix,
			Desc: fmt.Sprintf("prefix %q of %s on store %s", p, place, place.Namespace),
		})
	}
	if d.RoleARN != "" {
		out = append(out, Guard{
			Key: "r#" + digest(strings.ToLower(d.RoleARN), d.ExternalID), Hold: GuardOwn,
			Field: "destination.external_id", Value: d.ExternalID,
			Desc: fmt.Sprintf("role %s with this external id", d.RoleARN),
		})
	}
	id := dataset.TenantIdentity(a.Tenant())
	out = append(out, Guard{
		Key: GuardTenant + digest(id), Hold: GuardOwn,
		Field: "tenant_key", Value: a.Tenant(),
		Desc: fmt.Sprintf("tenant key %q", id),
	})
	slices.SortFunc(out, func(x, y Guard) int { return strings.Compare(x.Key, y.Key) })
	return out, nil
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Change is one field an update changes: its JSON path
// (destination.bucket) and its values before and after, as JSON ("" when
// absent).
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// Hidden stands in a Change for an external id's value.
const Hidden = "(hidden)"

// Diff returns the fields in which b differs from a, ordered by path; id,
// created_at and version are not compared. An external id's values are
// Hidden (it is shown once, when it is generated).
func Diff(a, b Account) []Change {
	fa, fb := flatten(a), flatten(b)
	keys := slices.Sorted(maps.Keys(fa))
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []Change
	for _, k := range keys {
		if k == "id" || k == "created_at" || fa[k] == fb[k] {
			continue
		}
		c := Change{Field: k, Old: fa[k], New: fb[k]}
		if k == "destination.external_id" {
			c.Old, c.New = hide(c.Old), hide(c.New)
		}
		out = append(out, c)
	}
	return out
}

func hide(v string) string {
	if v == "" {
		return ""
	}
	return Hidden
}

// flatten maps each leaf field's JSON path to its value as JSON.
func flatten(a Account) map[string]string {
	b, _ := json.Marshal(a)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if obj, ok := v.(map[string]any); ok {
			for k, inner := range obj {
				walk(strings.TrimPrefix(path+"."+k, "."), inner)
			}
			return
		}
		j, _ := json.Marshal(v)
		out[path] = string(j)
	}
	walk("", m)
	return out
}
