package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// Several sources. A deployment may read its datasets from more than one
// database (or schema): each dataset names its source (dataset.Source,
// default dataset.DefaultSource), and a platform that shards its tenants
// across databases gives one connection string per shard, each account
// naming its shard (account.Account.SourceShard). A Router holds one SQL
// source per (source, shard) and reads each query from its own.
//
// The deployment names the connection strings in environment variables,
// read once at start (DSNsFromEnv):
//
//	SOURCE_DSN, SOURCE_DSN_PARAMETER                      the default source
//	SOURCE_DSN_<SOURCE>, SOURCE_DSN_PARAMETER_<SOURCE>     a named source
//	SOURCE_DSN_<SOURCE>__<SHARD>, SOURCE_DSN_PARAMETER_<SOURCE>__<SHARD>
//	                                                       one shard of a source
//	SOURCE_DSN_PARAMETERS  a list of <source>[/<shard>]=<SSM parameter>, comma separated
//
// with names in upper case (DEFAULT for the default source's shards). A
// _PARAMETER variable names an SSM SecureString parameter holding the
// connection string; a connection string given itself wins over one. A source that has shard DSNs is sharded: an account
// reading it must name one of its shards, or the source must also have an
// unsharded DSN, which accounts without a shard read. An account's shard
// does not apply to a source that has none.

// Key names one connection string: a source and, for a sharded source, a
// shard.
type Key struct {
	Source string
	Shard  string // "" for the source's unsharded connection string
}

func (k Key) String() string {
	if k.Shard == "" {
		return k.Source
	}
	return k.Source + "/" + k.Shard
}

// EnvName is the environment variable of the key's literal connection
// string, e.g. SOURCE_DSN_BILLING or SOURCE_DSN_DEFAULT__EU2 (SOURCE_DSN
// for the default source's unsharded one).
func (k Key) EnvName() string { return k.env("SOURCE_DSN") }

// ParameterEnvName is the environment variable of the SSM parameter
// holding the key's connection string.
func (k Key) ParameterEnvName() string { return k.env("SOURCE_DSN_PARAMETER") }

func (k Key) env(prefix string) string {
	if k == (Key{Source: dataset.DefaultSource}) {
		return prefix
	}
	name := prefix + "_" + strings.ToUpper(k.Source)
	if k.Shard != "" {
		name += "__" + strings.ToUpper(k.Shard)
	}
	return name
}

// DSN is where one key's connection string is: in the environment
// (Value) or in an SSM parameter (Parameter). Var is the variable that
// said so, for errors.
type DSN struct {
	Value     string
	Parameter string
	Var       string
}

// ErrNoSource is wrapped by the errors of a query whose source, or whose
// account's shard of it, has no connection string in the deployment.
var ErrNoSource = errors.New("no connection string for the source")

// DSNsFromEnv reads every source connection string the environment names
// (environ is os.Environ()), the default source's (SOURCE_DSN or
// SOURCE_DSN_PARAMETER) included when set. Errors name the variable and
// its value (never a DSN's).
func DSNsFromEnv(environ []string) (map[Key]DSN, error) {
	out := map[Key]DSN{}
	var errs []error
	// A connection string itself wins over a parameter naming one (so a
	// local run's SOURCE_DSN overrides the deployed SOURCE_DSN_PARAMETER);
	// two of the same kind for one source are refused.
	add := func(k Key, d DSN) {
		prev, ok := out[k]
		switch {
		case !ok, prev.Value == "" && d.Value != "":
			out[k] = d
		case (prev.Value == "") == (d.Value == ""):
			errs = append(errs, fmt.Errorf("environment variable %s: source %s already has a connection string from %s", d.Var, k, prev.Var))
		}
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			continue
		}
		switch {
		case name == "SOURCE_DSN":
			add(Key{Source: dataset.DefaultSource}, DSN{Value: value, Var: name})
		case name == "SOURCE_DSN_PARAMETER":
			add(Key{Source: dataset.DefaultSource}, DSN{Parameter: value, Var: name})
		case name == "SOURCE_DSN_PARAMETERS":
			for i, item := range strings.Split(value, ",") {
				item = strings.TrimSpace(item)
				if item == "" {
					continue
				}
				key, param, ok := strings.Cut(item, "=")
				k, err := parseKey(strings.ReplaceAll(strings.TrimSpace(key), "/", "__"))
				if !ok || err != nil || !strings.HasPrefix(strings.TrimSpace(param), "/") {
					errs = append(errs, fmt.Errorf("environment variable SOURCE_DSN_PARAMETERS item %d %q: want <source>[/<shard>]=/<ssm parameter name>", i+1, item))
					continue
				}
				add(k, DSN{Parameter: strings.TrimSpace(param), Var: "SOURCE_DSN_PARAMETERS"})
			}
		case strings.HasPrefix(name, "SOURCE_DSN_PARAMETER_"):
			k, err := parseKey(strings.ToLower(strings.TrimPrefix(name, "SOURCE_DSN_PARAMETER_")))
			if err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
				continue
			}
			add(k, DSN{Parameter: value, Var: name})
		case strings.HasPrefix(name, "SOURCE_DSN_"):
			k, err := parseKey(strings.ToLower(strings.TrimPrefix(name, "SOURCE_DSN_")))
			if err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s: %w", name, err))
				continue
			}
			add(k, DSN{Value: value, Var: name})
		}
	}
	return out, errors.Join(errs...)
}

// parseKey reads "<source>" or "<source>__<shard>", lower case.
func parseKey(s string) (Key, error) {
	src, shard, sharded := strings.Cut(strings.ToLower(s), "__")
	if err := dataset.ValidSourceName(src); err != nil {
		return Key{}, fmt.Errorf("source name %q: %w", src, err)
	}
	if sharded {
		if err := dataset.ValidShardName(shard); err != nil {
			return Key{}, fmt.Errorf("shard name %q: %w", shard, err)
		}
	}
	return Key{Source: src, Shard: shard}, nil
}

// Router is a Source over several SQL sources, one per Key: each query is
// read from the source its dataset names, and from the account's shard
// of it when that source is sharded.
type Router struct {
	sources map[Key]*SQL
	sharded map[string]bool
}

var (
	_ Source        = (*Router)(nil)
	_ Fingerprinter = (*Router)(nil)
	_ Slicer        = (*Router)(nil)
)

// NewRouter returns a Router over sources (at least one).
func NewRouter(sources map[Key]*SQL) (*Router, error) {
	if len(sources) == 0 {
		return nil, errors.New("source router: no sources")
	}
	r := &Router{sources: maps.Clone(sources), sharded: map[string]bool{}}
	for k, s := range sources {
		if s == nil {
			return nil, fmt.Errorf("source router: source %s is nil", k)
		}
		if k.Shard != "" {
			r.sharded[k.Source] = true
		}
	}
	return r, nil
}

// Covers checks every dataset's source has a connection string (or, for a
// sharded source, at least one shard's): the first missing one is named
// with the variables that would supply it.
func (r *Router) Covers(datasets []dataset.Dataset) error {
	for _, d := range datasets {
		k := Key{Source: d.SourceName()}
		if _, ok := r.sources[k]; !ok && !r.sharded[k.Source] {
			return fmt.Errorf("dataset %s: source %q: set %s or %s: %w", d.Name, k.Source, k.EnvName(), k.ParameterEnvName(), ErrNoSource)
		}
	}
	return nil
}

// pick returns the SQL source of q, and the key it was chosen by.
func (r *Router) pick(q Query) (*SQL, Key, error) {
	name := q.Dataset.SourceName()
	k := Key{Source: name}
	if r.sharded[name] && q.Shard != "" {
		k.Shard = q.Shard
	}
	if s, ok := r.sources[k]; ok {
		return s, k, nil
	}
	// Unavailable too: the partition fails as source_unavailable and is
	// retried, and succeeds once the deployment supplies the DSN.
	switch {
	case k.Shard != "":
		return nil, k, unavailable{fmt.Errorf("dataset %s: source %q has no shard %q (the account's source_shard): set %s or %s: %w", q.Dataset.Name, name, k.Shard, k.EnvName(), k.ParameterEnvName(), ErrNoSource)}
	case r.sharded[name]:
		return nil, k, unavailable{fmt.Errorf("dataset %s: source %q is sharded and account %s names no source_shard (and the source has no unsharded %s): %w", q.Dataset.Name, name, q.AccountID, k.EnvName(), ErrNoSource)}
	}
	return nil, k, unavailable{fmt.Errorf("dataset %s: source %q: set %s or %s: %w", q.Dataset.Name, name, k.EnvName(), k.ParameterEnvName(), ErrNoSource)}
}

// Batches implements Source: it reads q from its source and says which in
// the provenance.
func (r *Router) Batches(ctx context.Context, q Query, fn func(b *dataset.Batch) error) (Provenance, error) {
	s, k, err := r.pick(q)
	if err != nil {
		return Provenance{Relation: q.Dataset.Relation, SourceName: k.Source, SourceShard: k.Shard}, err
	}
	prov, err := s.Batches(ctx, q, fn)
	prov.SourceName, prov.SourceShard = k.Source, k.Shard
	return prov, err
}

// Fingerprint implements Fingerprinter on q's source.
func (r *Router) Fingerprint(ctx context.Context, q Query) (Summary, error) {
	s, _, err := r.pick(q)
	if err != nil {
		return Summary{}, err
	}
	return s.Fingerprint(ctx, q)
}

// SliceBounds implements Slicer on q's source (the account's shard of it
// when it is sharded). A query the Router cannot route is its routing
// error, not ErrNoBounds: the partition fails as source_unavailable
// rather than slicing a day it cannot read.
func (r *Router) SliceBounds(ctx context.Context, q Query, n int, rows int64) ([]time.Time, error) {
	s, _, err := r.pick(q)
	if err != nil {
		return nil, err
	}
	return s.SliceBounds(ctx, q, n, rows)
}
