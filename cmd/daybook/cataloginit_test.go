package main

import (
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/dataset"
)

// TestAppendEntries: --append keeps a YAML file's every byte and adds the
// entries indented as its own items (2 spaces or none, comments kept), a
// JSON file is written again with the entries last, a new file takes the
// form of its name, and a file whose datasets list is not at its end, or
// that has the name already, is refused.
func TestAppendEntries(t *testing.T) {
	t.Parallel()
	s, err := dataset.Parse([]byte(zonedDoc("visits")))
	if err != nil {
		t.Fatal(err)
	}
	entry := s.Datasets()[0]
	entry.Queries, entry.Fingerprint = nil, nil
	entry.Name = "visits_two"
	for _, tc := range []struct {
		name, file, existing, want string
	}{
		{"yaml, two-space items", "c.yaml", "# my catalog\n" + zonedDoc("visits"), "\n  - name: visits_two\n    version: 1\n"},
		{"yaml, flush items and no final newline", "c.yaml", strings.TrimSuffix(strings.ReplaceAll(zonedDoc("visits"), "\n  ", "\n"), "\n"), "\n- name: visits_two\n  version: 1\n"},
		{"json", "c.json", `{"datasets": [{"name": "visits", "version": 1, "partition": "event_time", "partition_column": "seen_at", "relation": "app.visits", "mode": "incremental_append", "read": "union_all_partitions", "tenant_column": "org", "columns": [{"name": "seen_at", "type": "timestamp", "source_time_zone": "UTC"}]}]}`, `"name": "visits_two"`},
		{"new yaml", "c.yaml", "", "datasets:\n  - name: visits_two\n"},
		{"new json", "c.json", "", `"name": "visits_two"`},
	} {
		out, err := appendEntries([]byte(tc.existing), tc.file, []dataset.Dataset{entry})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(string(out), tc.want) || tc.file == "c.yaml" && !strings.HasPrefix(string(out), tc.existing) {
			t.Errorf("%s:\n%s", tc.name, out)
		}
		want := "visits_two"
		if tc.existing != "" {
			want = "visits,visits_two"
		}
		if s, err := dataset.Parse(out); err != nil || strings.Join(s.Names(), ",") != want {
			t.Errorf("%s: %v, want datasets %s\n%s", tc.name, err, want, out)
		}
	}
	for _, tc := range []struct{ name, existing, want string }{
		{"not a catalog", zonedDoc("visits") + "extra: 1\n", `unknown field "extra"`},
		{"flow style", `datasets: [{name: visits, version: 1, partition: event_time, partition_column: seen_at, relation: app.visits, mode: incremental_append, read: union_all_partitions, tenant_column: org, columns: [{name: seen_at, type: timestamp, source_time_zone: UTC}]}]`, "add the entries by hand"},
		{"the name again", zonedDoc("visits_two"), "dataset visits_two is already in the file"},
	} {
		if _, err := appendEntries([]byte(tc.existing), "c.yaml", []dataset.Dataset{entry}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// zonedDoc is a catalog of one generated dataset called name.
func zonedDoc(name string) string {
	return `datasets:
  - name: ` + name + `
    version: 1
    partition: event_time
    partition_column: seen_at
    relation: app.visits
    mode: incremental_append
    read: union_all_partitions
    tenant_column: org
    columns:
      - {name: seen_at, type: timestamp, source_time_zone: UTC}
`
}
