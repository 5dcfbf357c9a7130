package demosource

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/bucket/azure"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/envvar"
	"github.com/daybook-dev/daybook/shared/fileformat"
)

// tenant is the profile of one demo account: everything that differs
// between the three.
type tenant struct {
	name        string
	zone        string
	format      fileformat.Format
	compression fileformat.Codec
	roleARN     string
	externalID  string
	store       account.StoreKind // "" is S3
	scale       float64           // volume relative to EventsPerDay
	currency    string
	countries   []weighted[string]
	plans       []string          // nil: the plan column stays NULL
	upgrades    map[string]string // plan → plan a purchase moves the user to
	minCents    int64
	maxCents    int64
}

// tenants are the demo accounts' profiles, in order (demo 1, 2, 3).
var tenants = []tenant{
	{
		name: "Demo web analytics", zone: "UTC",
		format: fileformat.Parquet, compression: fileformat.Snappy,
		scale: 1.0, currency: "USD", minCents: 5_00, maxCents: 400_00,
		countries: []weighted[string]{{"US", 45}, {"GB", 15}, {"CA", 10}, {"DE", 10}, {"FR", 8}, {"AU", 7}, {"NL", 5}},
		plans:     []string{"free", "free", "free", "plus"},
		upgrades:  map[string]string{"free": "plus"},
	},
	{
		name: "Demo e-commerce BR", zone: "America/Sao_Paulo",
		format: fileformat.NDJSON, compression: fileformat.Gzip,
		scale: 0.85, currency: "BRL", minCents: 19_90, maxCents: 1500_00,
		countries: []weighted[string]{{"BR", 85}, {"AR", 6}, {"PT", 5}, {"UY", 4}},
	},
	{
		name: "Demo SaaS IN", zone: "Asia/Kolkata",
		format: fileformat.Parquet, compression: fileformat.Zstd,
		roleARN: RoleARN3, externalID: ExternalID3,
		scale: 1.15, currency: "INR", minCents: 499_00, maxCents: 49_999_00,
		countries: []weighted[string]{{"IN", 80}, {"SG", 6}, {"AE", 6}, {"US", 5}, {"GB", 3}},
		plans:     []string{"free", "free", "pro", "pro", "enterprise"},
	},
}

// storeTenants are the accounts on the other stores (Options.OtherStores):
// demo 4 on Google Cloud Storage, demo 5 on Azure Blob Storage.
var storeTenants = []tenant{
	{
		name: "Demo logistics GCS", zone: "UTC", store: account.StoreGCS,
		format: fileformat.Parquet, compression: fileformat.Snappy,
		scale: 0.4, currency: "EUR", minCents: 2_00, maxCents: 90_00,
		countries: []weighted[string]{{"DE", 40}, {"FR", 25}, {"NL", 20}, {"BE", 15}},
	},
	{
		name: "Demo fintech Azure", zone: "UTC", store: account.StoreAzure,
		format: fileformat.Parquet, compression: fileformat.Zstd,
		scale: 0.4, currency: "GBP", minCents: 1_00, maxCents: 250_00,
		countries: []weighted[string]{{"GB", 70}, {"IE", 20}, {"US", 10}},
	},
}

// tenantsFor are the tenants of opts: the three S3 ones, then with
// OtherStores the GCS and Azure ones.
func tenantsFor(opts Options) []tenant {
	if !opts.OtherStores {
		return tenants
	}
	return append(append([]tenant(nil), tenants...), storeTenants...)
}

// demoAccounts returns the accounts; their ids come from a stream seeded
// by opts.Seed alone.
func demoAccounts(opts Options) ([]account.Account, error) {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:8], opts.Seed)
	copy(seed[8:], "daybook demo account ids")
	ids := rand.NewChaCha8(seed)
	ex, err := dataset.Example() // the demo's catalog
	if err != nil {
		return nil, err
	}
	names := ex.Names()
	settle := account.Duration(DefaultSettleDelay)
	all := tenantsFor(opts)
	out := make([]account.Account, len(all))
	for i, t := range all {
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
		switch t.store {
		case account.StoreGCS:
			a.Destination.StoreKind, a.Destination.Region = account.StoreGCS, ""
		case account.StoreAzure:
			a.Destination.StoreKind, a.Destination.Region = account.StoreAzure, ""
			a.Destination.StorageAccount = azure.EmulatorAccount
		}
		// The GCS and Azure accounts' endpoints are the caller's emulators
		// (left unset here): they are checked as at one, reached without
		// credentials, as account validation allows only there.
		v := a
		if t.store == account.StoreGCS || t.store == account.StoreAzure {
			v.Destination.Endpoint = "http://127.0.0.1:1"
		}
		if err := errors.Join(v.ValidateShape(ex), v.ValidateStart(opts.Now, envvar.DefaultMaxBackfillDays)); err != nil {
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
