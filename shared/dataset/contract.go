package dataset

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A dataset's contract is the layout version it is delivered under, the
// `v1` segment of `<prefix>/v1/<dataset>/...` (D2, F1). A compatible change
// (Compatible) keeps the contract; an incompatible one is possible only as a
// new contract: the catalog declares `contract: v2`, the dataset is then
// delivered under `<prefix>/v2/<dataset>/` from its start date again, and
// everything under `v1/<dataset>/` stays as it was, never deleted and never
// written again.
//
// The ledger keys a partition by dataset and day. A dataset at v1 keeps its
// bare name there (rows written before contracts existed are v1 rows); at a
// later contract its ledger name is `<dataset>.<contract>` (LedgerName),
// so the new contract's partitions are new rows, materialized from the
// account's start date like a new dataset's, while the v1 rows keep their
// history and are never claimed again (Resolve refuses them).

// DefaultContract is the contract of a dataset that declares none.
const DefaultContract = "v1"

var contractRE = regexp.MustCompile(`^v[1-9][0-9]{0,2}$`)

// ContractVersion returns the dataset's contract: Contract, or v1.
func (d Dataset) ContractVersion() string {
	if d.Contract == "" {
		return DefaultContract
	}
	return d.Contract
}

// LedgerName is the dataset's name in the ledger, job messages and
// partition keys: the name at v1, `<name>.<contract>` at a later contract.
func (d Dataset) LedgerName() string {
	return LedgerName(d.Name, d.ContractVersion())
}

// LedgerName is the ledger name of dataset name at contract.
func LedgerName(name, contract string) string {
	if contract == "" || contract == DefaultContract {
		return name
	}
	return name + "." + contract
}

// Current is the ledger name of the partitions the catalog delivers for
// name now: a bare catalog name of a dataset at a later contract than v1 is
// its LedgerName (events → events.v2), so an operator's re-export, retry
// or reseed of `events` reaches the rows that are still delivered, not the
// retired v1 rows that are never exported again. A name that carries a
// contract, or that the catalog does not know, is returned as given (the
// caller's checks refuse what is wrong with it).
func (s *Set) Current(name string) string {
	for _, d := range s.datasets {
		if d.Name == name { // a bare catalog name, never a ledger name with its contract
			return d.LedgerName()
		}
	}
	return name
}

// SplitLedgerName splits a ledger name into the dataset name and its
// contract ("" when the name carries none: a catalog name, or a v1 row).
func SplitLedgerName(key string) (name, contract string) {
	if i := strings.IndexByte(key, '.'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return key, ""
}

// ContractOf returns the contract a ledger name (LedgerName) stands for:
// the contract it carries, else v1. A bare catalog name of a dataset at a
// later contract is not its ledger name (Set.Current maps one to the
// other).
func ContractOf(key string) string {
	if _, c := SplitLedgerName(key); c != "" {
		return c
	}
	return DefaultContract
}

// Resolve returns the dataset a ledger name stands for, refusing one of a
// contract the catalog no longer delivers (a v1 row of a dataset now at
// v2): that contract's tree stays as it was, so its partitions are never
// exported again. The refusal wraps ErrUnknownDataset.
func (s *Set) Resolve(key string) (Dataset, error) {
	name, c := SplitLedgerName(key)
	d, err := s.Get(name)
	if err != nil {
		return Dataset{}, err
	}
	if c == "" {
		c = DefaultContract
	}
	if d.ContractVersion() != c {
		return Dataset{}, fmt.Errorf("dataset %q: contract %s is retired (the catalog delivers %s under %s): %w", key, c, name, d.ContractVersion(), ErrUnknownDataset)
	}
	return d, nil
}

func (d Dataset) validateContract() error {
	if d.Contract != "" && !contractRE.MatchString(d.Contract) {
		return fmt.Errorf("dataset %s: contract %q must be v1, v2, ... (%s)", d.Name, d.Contract, contractRE)
	}
	return nil
}

// CompatibleContract is Compatible within one contract. Across contracts
// any change is accepted, since the new contract's tree starts empty, as
// long as the contract goes up: a catalog that goes back to an earlier
// contract is refused, since that tree is no longer written.
func CompatibleContract(prev, next Dataset) error {
	pc, nc := prev.ContractVersion(), next.ContractVersion()
	switch {
	case pc == nc:
		return Compatible(prev, next)
	case contractNumber(nc) < contractNumber(pc):
		return fmt.Errorf("dataset %s: contract lowered from %s to %s (%s/%s/ is no longer written): %w", prev.Name, pc, nc, pc, prev.Name, ErrIncompatible)
	}
	return nil
}

// contractNumber is N of vN (validated by validateContract).
func contractNumber(c string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(c, "v"))
	return n
}

// NewestContracts keeps, per dataset name, the entry of the highest
// contract, in first-seen order: what a dataset delivered under several
// contracts is held to now.
func NewestContracts(ds []Dataset) []Dataset {
	at := map[string]int{}
	var out []Dataset
	for _, d := range ds {
		i, ok := at[d.Name]
		switch {
		case !ok:
			at[d.Name] = len(out)
			out = append(out, d)
		case contractNumber(d.ContractVersion()) > contractNumber(out[i].ContractVersion()):
			out[i] = d
		}
	}
	return out
}
