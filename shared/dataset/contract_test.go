package dataset

import (
	"errors"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset/example"
)

// TestCompatibleContract: within a contract a dropped column is refused,
// naming it; a higher contract accepts it (its tree starts empty); a lower
// one is refused.
func TestCompatibleContract(t *testing.T) {
	t.Parallel()
	ex, err := Example()
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := ex.Get("events")
	dropped := v1.clone()
	dropped.Columns = dropped.Columns[:len(dropped.Columns)-1]
	at := func(d Dataset, c string) Dataset { d.Contract = c; return d }
	tests := []struct {
		name       string
		prev, next Dataset
		want       string // "" accepted
	}{
		{"drop at v1", v1, dropped, "removed"},
		{"drop at v2 after v2", at(v1, "v2"), at(dropped, "v2"), "removed"},
		{"drop with v2", v1, at(dropped, "v2"), ""},
		{"drop with v10 after v9", at(v1, "v9"), at(dropped, "v10"), ""},
		{"back to v1", at(v1, "v2"), v1, "contract lowered from v2 to v1"},
		{"unchanged", v1, at(v1, "v1"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CompatibleContract(tt.prev, tt.next)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// TestContractField: contract defaults to v1, names the ledger rows, and a
// bad value is refused naming the dataset, field and value.
func TestContractField(t *testing.T) {
	t.Parallel()
	doc := func(c string) []byte {
		return []byte(strings.Replace(string(example.YAML()), "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n"+c, 1))
	}
	s, err := Parse(doc(""))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Get("events")
	if d.ContractVersion() != "v1" || d.LedgerName() != "events" {
		t.Errorf("default: contract %q, ledger name %q", d.ContractVersion(), d.LedgerName())
	}
	s, err = Parse(doc("    contract: v2\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ = s.Get("events.v2")
	if d.ContractVersion() != "v2" || d.LedgerName() != "events.v2" {
		t.Errorf("v2: contract %q, ledger name %q", d.ContractVersion(), d.LedgerName())
	}
	for _, bad := range []string{"2", "v0", "V2", "v2.1"} {
		if _, err := Parse(doc("    contract: \"" + bad + "\"\n")); err == nil || !strings.Contains(err.Error(), `dataset events: contract "`+bad+`"`) || !strings.Contains(err.Error(), "datasets[0]") {
			t.Errorf("contract %q: err = %v", bad, err)
		}
	}
}

// TestResolve: a ledger name of the catalog's contract resolves; a v1 row
// of a dataset now at v2 is refused as retired.
func TestResolve(t *testing.T) {
	t.Parallel()
	y := strings.Replace(string(example.YAML()), "  - name: events\n    version: 1\n", "  - name: events\n    version: 1\n    contract: v2\n", 1)
	s, err := Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := s.Resolve("events.v2"); err != nil || d.Name != "events" {
		t.Errorf("s.Resolve(events.v2) = %v, %v", d.Name, err)
	}
	if _, err := s.Resolve("events"); err == nil || !errors.Is(err, ErrUnknownDataset) || !strings.Contains(err.Error(), "contract v1 is retired") {
		t.Errorf("s.Resolve(events) = %v", err)
	}
	if _, err := s.Resolve("profiles"); err != nil {
		t.Errorf("s.Resolve(profiles) = %v", err)
	}
	if s.Current("events") != "events.v2" || s.Current("events.v1") != "events.v1" || s.Current("profiles") != "profiles" {
		t.Errorf("Current: %s %s %s", s.Current("events"), s.Current("events.v1"), s.Current("profiles"))
	}
	if ContractOf("events") != "v1" || ContractOf("events.v2") != "v2" || ContractOf("profiles") != "v1" {
		t.Errorf("ContractOf: %s %s %s", ContractOf("events"), ContractOf("events.v2"), ContractOf("profiles"))
	}
}
