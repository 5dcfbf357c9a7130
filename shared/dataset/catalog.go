package dataset

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/daybook-dev/daybook/shared/dataset/example"
	"sigs.k8s.io/yaml"
)

// The catalog is the deployment's configuration (D1): a YAML or JSON file
// the deploying team keeps in its own repository, named at build time and
// read once at start-up (FromEnv or Load) by each process's main, which
// hands the *Set to whatever needs it: nothing reads a process-wide
// catalog. The shipped example is the demo's three datasets, embedded
// (Example).

// EnvCatalog names the environment variable a process reads its catalog
// file from: a path, relative to the Lambda task root (LAMBDA_TASK_ROOT)
// when it is not absolute.
const EnvCatalog = "DAYBOOK_CATALOG"

// BundledName is the file the build puts beside a function's bootstrap
// when the deployment names its catalog (make build-<Function>
// CATALOG=path, which sam build runs): a function without DAYBOOK_CATALOG
// reads it from its task root, and uses the shipped example when there is
// none.
const BundledName = "catalog.yaml"

// Set is a loaded, validated catalog: its datasets in file order.
type Set struct {
	datasets []Dataset
}

// Parse decodes and validates a catalog document, YAML or JSON (JSON is
// YAML). Unknown fields and duplicate keys are refused.
func Parse(b []byte) (*Set, error) {
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		return nil, fmt.Errorf("parse dataset catalog: %w", err)
	}
	ds, err := ParseCatalog(j)
	if err != nil {
		return nil, err
	}
	return &Set{datasets: ds}, nil
}

// ResolveEntry completes one catalog entry as the loader does (its queries
// generated when it names tenant_column) and validates it; d is not
// changed.
func ResolveEntry(d Dataset) (Dataset, error) {
	d = d.clone()
	for j := range d.Columns {
		// "since" defaults to 1: the catalog always carries it, so the
		// schema snapshot records every column's version explicitly.
		d.Columns[j].Since = d.Columns[j].SinceVersion()
	}
	if err := d.generate(); err != nil {
		return Dataset{}, err
	}
	if err := d.Validate(); err != nil {
		return Dataset{}, err
	}
	return d, nil
}

// Load reads and parses the catalog file at path; the error names it.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dataset catalog: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// FromEnv loads the catalog DAYBOOK_CATALOG names (relative to
// LAMBDA_TASK_ROOT, or the working directory); without it, the task root's
// catalog.yaml (BundledName) when there is one, else the shipped example.
// Errors name the variable.
func FromEnv(lookup func(string) (string, bool)) (*Set, error) {
	root, _ := lookup("LAMBDA_TASK_ROOT")
	p, ok := lookup(EnvCatalog)
	if !ok || p == "" {
		if root == "" {
			return Example()
		}
		bundled := filepath.Join(root, BundledName)
		if _, err := os.Stat(bundled); err != nil {
			return Example()
		}
		s, err := Load(bundled)
		if err != nil {
			return nil, fmt.Errorf("the bundled catalog (%s unset): %w", EnvCatalog, err)
		}
		return s, nil
	}
	if !filepath.IsAbs(p) && root != "" {
		p = filepath.Join(root, p)
	}
	s, err := Load(p)
	if err != nil {
		return nil, fmt.Errorf("environment variable %s=%q: %w", EnvCatalog, p, err)
	}
	return s, nil
}

var exampleSet = sync.OnceValues(func() (*Set, error) { return Parse(example.YAML()) })

// Example returns the shipped example catalog.
func Example() (*Set, error) { return exampleSet() }

// Datasets returns the catalog's datasets in file order, as copies.
func (s *Set) Datasets() []Dataset {
	out := make([]Dataset, len(s.datasets))
	for i, d := range s.datasets {
		out[i] = d.clone()
	}
	return out
}

// Names returns the dataset names in file order.
func (s *Set) Names() []string {
	names := make([]string, len(s.datasets))
	for i, d := range s.datasets {
		names[i] = d.Name
	}
	return names
}

// Get returns a copy of the dataset called name, or an error wrapping
// ErrUnknownDataset. name may be a ledger name (LedgerName): its contract
// is not checked (Resolve checks it).
func (s *Set) Get(name string) (Dataset, error) {
	bare, _ := SplitLedgerName(name)
	for _, d := range s.datasets {
		if d.Name == bare {
			return d.clone(), nil
		}
	}
	return Dataset{}, fmt.Errorf("dataset %q: %w", name, ErrUnknownDataset)
}

// ErrCatalogIncompatible is wrapped by CheckAgainst's refusal.
var ErrCatalogIncompatible = errors.New("catalog incompatible with the delivered schema")

// CheckAgainst compares every dataset of s that delivered also has with
// delivered's (CompatibleContract: at the same contract, Compatible; a new
// contract may change anything): the first refusal names the dataset and
// the column. A dataset delivered under several contracts is held to its
// newest. A dataset delivered and no longer in s is refused too: its
// customers' tables would stop receiving days without a word.
func (s *Set) CheckAgainst(delivered []Dataset) error {
	var errs []error
	for _, old := range NewestContracts(delivered) {
		cur, err := s.Get(old.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("dataset %s: removed from the catalog: %w", old.Name, ErrIncompatible))
			continue
		}
		if err := CompatibleContract(old, cur); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrCatalogIncompatible, errors.Join(errs...))
	}
	return nil
}
