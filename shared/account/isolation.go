package account

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// Isolation between accounts (C4). Every key daybook writes for an account is
// under its rendered prefix (package layout), and the exporter deletes what
// it did not write under a partition of that prefix (E3). Two accounts whose
// (store, bucket, prefix) are equal or nested could therefore read, overwrite
// or delete each other's files; two accounts with the same role and external
// id would both be able to act as the customer who set that role up.

// CheckIsolation refuses candidate when, for stage, it would share storage or
// credentials with one of others (every other stored account, enabled or
// not: a disabled account's files are still there):
//
//   - its place (Destination.Place: the store's bucket namespace and the
//     bucket) is another's and its rendered prefix equals, contains or is
//     contained in the other's, compared by whole segments (`a/b` contains
//     `a/b/c`, not `a/bc`). The namespace is AWS S3 or a custom endpoint's
//     host and port (one bucket name on two endpoints is two buckets), GCS,
//     or an Azure storage account (a container is its account's);
//   - its role ARN (compared case-insensitively, as IAM role names are) and
//     external id are another's;
//   - its tenant key (Tenant: tenant_key, else the id) is another's,
//     compared by identity (dataset.TenantIdentity: "0007", "+7" and "7"
//     bind one integer, a uuid in upper and lower case one uuid), on any
//     source shard: both would export that tenant's rows. Another shard is
//     no separation, since a dataset whose source is not sharded reads one
//     database for every account (source.Router), and which sources are
//     sharded is the deployment's, unknown here.
//
// An account with candidate's id in others is the candidate's stored
// version: an update does not conflict with itself. Each conflict is a
// *FieldError naming the field, the candidate's value and the other account;
// they are joined. It reads nothing and changes nothing: the caller lists
// the accounts (ledger.ListAccounts) and saves only when this returns nil.
func CheckIsolation(candidate Account, others []Account, stage string) error {
	if stage == "" {
		return &FieldError{Field: "stage", Value: "", Reason: "required to render the prefixes being compared"}
	}
	tmpl := cmp.Or(candidate.Destination.Prefix, DefaultPrefix)
	mine, err := layout.RenderPrefix(tmpl, candidate.Vars(stage))
	if err != nil {
		return &FieldError{Field: "destination.prefix", Value: tmpl, Reason: reason(err)}
	}
	d := candidate.Destination
	var p problems
	for _, o := range others {
		if o.ID == candidate.ID {
			continue
		}
		od := o.Destination
		if place := d.Place(); place == od.Place() {
			theirs := renderLoose(o, stage)
			switch {
			case layout.Within(theirs, mine) && layout.Within(mine, theirs):
				p.add("destination.prefix", mine, "is account %s's prefix in %s", o.ID, place)
			case layout.Within(theirs, mine):
				p.add("destination.prefix", mine, "contains account %s's prefix %q in %s", o.ID, theirs, place)
			case layout.Within(mine, theirs):
				p.add("destination.prefix", mine, "is inside account %s's prefix %q in %s", o.ID, theirs, place)
			}
		}
		if mine, theirs := candidate.Tenant(), o.Tenant(); dataset.TenantIdentity(mine) == dataset.TenantIdentity(theirs) {
			same := ""
			if mine != theirs {
				same = fmt.Sprintf(" (%q, which names the same tenant)", theirs)
			}
			p.add("tenant_key", mine, "is account %s's tenant key%s: both accounts would export the same tenant's rows (on another source shard too: a source that is not sharded is one database for every account)", o.ID, same)
		}
		if d.RoleARN != "" && strings.EqualFold(d.RoleARN, od.RoleARN) && d.ExternalID == od.ExternalID {
			p.add("destination.external_id", d.ExternalID, "account %s already uses role %s with this external id; each account needs its own", o.ID, od.RoleARN)
		}
	}
	return errors.Join(p...)
}

// renderLoose renders a stored account's prefix without the template rules:
// an account saved before a rule existed still occupies its prefix.
func renderLoose(a Account, stage string) string {
	tmpl := cmp.Or(a.Destination.Prefix, DefaultPrefix)
	if p, err := layout.RenderPrefix(tmpl, a.Vars(stage)); err == nil {
		return p
	}
	return strings.NewReplacer(layout.PlaceholderAccountID, a.ID, layout.PlaceholderStage, stage).Replace(tmpl)
}
