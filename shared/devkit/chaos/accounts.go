package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// Account races: from the second round, for a seeded number of rounds,
// raceGroup creates run at once whose destinations overlap (C4): a parent
// prefix in an existing account's bucket, a child of it and a child of the
// child, and one of: a child of the existing account's prefix, the parent's
// role and external id in another bucket, or a demo account's role and
// external id. A control in a bucket of its own runs with them. The created
// accounts stay disabled, so the sweeper never exports them. The check then
// holds the ledger to:
//   - no two accounts it stored overlap, and none overlaps an account stored
//     before the round (of the three nested creates exactly one commits);
//   - every refusal is ErrIsolation naming an account it overlaps that is
//     stored; the control is created;
//   - over every bucket, no object key lies under two accounts' rendered
//     prefixes, names another account's id below its own account's prefix,
//     or is a manifest of another account (checkAccountPrefixes).

const (
	raceGroup     = 4
	raceBucket    = "daybook-chaos-race"
	controlBucket = "daybook-chaos-control"
	raceRole      = "arn:aws:iam::123456789012:role/daybook-chaos-race"
)

// AccountRaces counts the account races and the prefix check.
type AccountRaces struct {
	Rounds   int // rounds that raced creates
	Creates  int // overlapping creates attempted (controls not counted)
	Created  int // of them, committed
	Refused  int // of them, refused with the isolation error
	Controls int // controls created
	Accounts int // stored accounts whose prefixes the check covered
	Objects  int // object keys checked against every account's prefix
}

// races is the races' own random stream (the run's other draws do not
// move) and how many rounds race.
type races struct {
	rng          *rand.Rand
	want         int
	bucketsReady bool
}

func (r *races) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(r.rng.Uint32())
	}
	return len(b), nil
}

// raceAccounts runs one round's race, if this round races.
func (p *pipeline) raceAccounts(ctx context.Context, round int) error {
	r := &p.races
	if r.rng == nil {
		r.rng = rand.New(rand.NewPCG(p.o.Seed, 0xacc0))
		r.want = 2 + r.rng.IntN(3)
	}
	if round < 2 || p.rep.Accounts.Rounds >= r.want {
		return nil
	}
	p.rep.Accounts.Rounds++
	if !r.bucketsReady {
		for _, b := range []string{raceBucket, controlBucket} {
			if _, err := p.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		r.bucketsReady = true
	}
	before, err := p.led.Accounts().ListAccounts(ctx)
	if err != nil {
		return err
	}
	// Around an S3 account: the races' roles and external ids are S3's
	// (a GCS or Azure destination refuses them as another store's).
	var onS3 []account.Account
	for _, a := range p.accounts {
		if a.Destination.Kind() == account.StoreS3 {
			onS3 = append(onS3, a)
		}
	}
	e := onS3[r.rng.IntN(len(onS3))]
	ePrefix, err := e.Prefix(p.stage)
	if err != nil {
		return err
	}
	newAcct := func(bucket, tmpl, role, ext string) (account.Account, error) {
		id, err := account.NewID(r)
		a := e
		a.ID, a.Name, a.Enabled, a.Version = id, "chaos race "+id, false, 0
		a.Datasets = slices.Clone(e.Datasets)
		a.Destination.Bucket, a.Destination.Prefix = bucket, strings.ReplaceAll(tmpl, "<id>", id)
		a.Destination.RoleARN, a.Destination.ExternalID = role, ext
		return a, err
	}
	tag := fmt.Sprintf("race-%d", round)
	ext := fmt.Sprintf("chaos-race-%d", round)
	var group []account.Account
	var errs []error
	add := func(bucket, tmpl, role, ext string) {
		a, err := newAcct(bucket, tmpl, role, ext)
		group, errs = append(group, a), append(errs, err)
	}
	add(e.Destination.Bucket, tag+"/"+layout.PlaceholderAccountID, raceRole, ext)
	add(e.Destination.Bucket, tag+"/"+group[0].ID+"/"+layout.PlaceholderAccountID, "", "")
	add(e.Destination.Bucket, tag+"/"+group[0].ID+"/"+group[1].ID+"/"+layout.PlaceholderAccountID, "", "")
	nested := slices.Clone(group)
	switch r.rng.IntN(3) {
	case 0: // inside the existing account's prefix
		add(e.Destination.Bucket, ePrefix+"/"+layout.PlaceholderAccountID, "", "")
	case 1: // the parent's role and external id, elsewhere
		add(raceBucket, tag+"/"+layout.PlaceholderAccountID, raceRole, ext)
	default: // an existing account's role and external id
		var withRole account.Account
		for _, a := range before {
			if a.Destination.RoleARN != "" {
				withRole = a
			}
		}
		if withRole.ID == "" {
			return errors.New("chaos: no stored account has a role")
		}
		add(raceBucket, tag+"-role/"+layout.PlaceholderAccountID, withRole.Destination.RoleARN, withRole.Destination.ExternalID)
	}
	add(controlBucket, tag+"/"+layout.PlaceholderAccountID, "", "")
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.rng.Shuffle(raceGroup, func(i, j int) { group[i], group[j] = group[j], group[i] })

	// All at once: each waits for the others to be ready.
	go1 := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(len(group))
	for i, a := range group {
		done.Go(func() {
			ready.Done()
			<-go1
			_, errs[i] = p.led.Accounts().CreateAccount(ctx, a, "chaos")
		})
	}
	ready.Wait()
	close(go1)
	done.Wait()

	control := group[raceGroup]
	if errs[raceGroup] != nil {
		p.problem("account race %d: control %s not created: %v", round, control.ID, errs[raceGroup])
	} else {
		p.rep.Accounts.Controls++
	}
	var won []account.Account
	for i, a := range group[:raceGroup] {
		if errs[i] == nil {
			won = append(won, a)
		}
	}
	stored := append(slices.Clone(before), won...)
	c := &p.rep.Accounts
	created := 0
	for i, a := range group[:raceGroup] {
		c.Creates++
		what := fmt.Sprintf("account race %d: %s (%s in %s)", round, a.ID, a.Destination.Prefix, a.Destination.Bucket)
		var conflicts []string
		for _, o := range stored {
			if o.ID != a.ID && p.overlap(a, o) {
				conflicts = append(conflicts, o.ID)
			}
		}
		switch {
		case errs[i] == nil:
			c.Created++
			if len(conflicts) > 0 {
				p.problem("%s: created though it overlaps %s", what, strings.Join(conflicts, ", "))
			}
			if slices.ContainsFunc(nested, func(n account.Account) bool { return n.ID == a.ID }) {
				created++
			}
		case !errors.Is(errs[i], ledger.ErrIsolation):
			p.problem("%s: refused with %v, want the isolation error", what, errs[i])
		case len(conflicts) == 0:
			c.Refused++
			p.problem("%s: refused though it overlaps no stored account: %v", what, errs[i])
		case !slices.ContainsFunc(conflicts, func(id string) bool { return strings.Contains(errs[i].Error(), id) }):
			c.Refused++
			p.problem("%s: refusal names none of the accounts it overlaps (%s): %v", what, strings.Join(conflicts, ", "), errs[i])
		default:
			c.Refused++
		}
	}
	if created != 1 {
		p.problem("account race %d: %d of the 3 nested creates committed, want exactly 1", round, created)
	}
	p.logf("account race %d: %d overlapping creates around %s, %d committed, %d refused; control %v", round, raceGroup, e.ID, len(won), raceGroup-len(won), errs[raceGroup] == nil)
	return nil
}

// overlap reports whether a and b may not both be stored: one's rendered
// prefix is (segment by segment) within the other's on one store and
// bucket, or they use one role with one external id.
func (p *pipeline) overlap(a, b account.Account) bool {
	da, db := a.Destination, b.Destination
	if da.RoleARN != "" && strings.EqualFold(da.RoleARN, db.RoleARN) && da.ExternalID == db.ExternalID {
		return true
	}
	if da.Bucket != db.Bucket || da.Store() != db.Store() {
		return false
	}
	pa, err1 := a.Prefix(p.stage)
	pb, err2 := b.Prefix(p.stage)
	if err1 != nil || err2 != nil {
		return false
	}
	sa, sb := layout.Segments(pa), layout.Segments(pb)
	n := min(len(sa), len(sb))
	return slices.Equal(sa[:n], sb[:n])
}

// checkAccountPrefixes lists every object of every bucket and holds it to
// the stored accounts' rendered prefixes: under at most one, naming no
// other account's id below it, and a manifest there is that account's.
func (p *pipeline) checkAccountPrefixes(ctx context.Context) error {
	accts, err := p.led.Accounts().ListAccounts(ctx)
	if err != nil {
		return err
	}
	type owned struct {
		id, prefix string
	}
	byBucket := map[string][]owned{}
	ids := map[string]bool{}
	for _, a := range accts {
		prefix, err := a.Prefix(p.stage)
		if err != nil {
			p.problem("account %s: prefix: %v", a.ID, err)
			continue
		}
		byBucket[a.Destination.Bucket] = append(byBucket[a.Destination.Bucket], owned{a.ID, strings.TrimSuffix(prefix, "/") + "/"})
		ids[a.ID] = true
	}
	c := &p.rep.Accounts
	c.Accounts = len(accts)
	buckets, err := p.s3.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return err
	}
	names := p.storeBuckets()
	for _, b := range buckets.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	for _, bucket := range names {
		store := p.bucketNamed(bucket)
		objs, err := store.List(ctx, "", 100_000)
		if err != nil {
			return err
		}
		for _, o := range objs {
			key := o.Key
			c.Objects++
			var under []owned
			for _, a := range byBucket[bucket] {
				if strings.HasPrefix(key, a.prefix) {
					under = append(under, a)
				}
			}
			if len(under) > 1 {
				p.problem("%s: under the prefixes of accounts %s and %s", store.URI(key), under[0].id, under[1].id)
			}
			if len(under) != 1 {
				continue
			}
			own := under[0]
			for _, seg := range strings.Split(strings.TrimPrefix(key, own.prefix), "/") {
				if seg != own.id && ids[seg] {
					p.problem("%s: account %s's object under account %s's prefix", store.URI(key), seg, own.id)
				}
			}
			if base := path.Base(key); base == layout.ManifestName || base == "manifest.json" {
				body, err := p.get(ctx, bucket, key)
				if err != nil {
					return err
				}
				var m struct {
					AccountID string `json:"account_id"`
				}
				if err := json.Unmarshal(body, &m); err != nil || m.AccountID != own.id {
					p.problem("%s: account %q's manifest under account %s's prefix", store.URI(key), m.AccountID, own.id)
				}
			}
		}
	}
	return nil
}

// plantForeign puts, for the self-test, a copy of one account's delivery
// manifest under another's prefix, and an object naming the first under
// the second's prefix; it returns what the check must report.
func (p *pipeline) plantForeign(ctx context.Context) ([]string, error) {
	a, b := p.accounts[0], p.accounts[1]
	pa, err := a.Prefix(p.stage)
	if err != nil {
		return nil, err
	}
	pb, err := b.Prefix(p.stage)
	if err != nil {
		return nil, err
	}
	list, err := p.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &a.Destination.Bucket,
		Prefix: aws.String(strings.TrimSuffix(pa, "/") + "/" + layout.Version + "/" + layout.DeliveryManifestsDir + "/")})
	if err != nil {
		return nil, err
	}
	if len(list.Contents) == 0 {
		return nil, fmt.Errorf("chaos self-test: account %s has no delivery manifest", a.ID)
	}
	body, err := p.get(ctx, a.Destination.Bucket, aws.ToString(list.Contents[0].Key))
	if err != nil {
		return nil, err
	}
	bucket := b.Destination.Bucket
	planted := map[string]string{
		strings.TrimSuffix(pb, "/") + "/" + layout.Version + "/" + layout.DeliveryManifestsDir + "/dt=2000-01-01/manifest.json": fmt.Sprintf("account %q's manifest under account %s's prefix", a.ID, b.ID),
		strings.TrimSuffix(pb, "/") + "/" + strings.TrimSuffix(pa, "/") + "/" + layout.Version + "/" + layout.ReadmeName:        fmt.Sprintf("account %s's object under account %s's prefix", a.ID, b.ID),
	}
	var want []string
	for key, w := range planted {
		if _, err := p.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader(string(body))}); err != nil {
			return nil, err
		}
		want = append(want, "s3://"+bucket+"/"+key+": "+w)
	}
	slices.Sort(want)
	return want, nil
}
