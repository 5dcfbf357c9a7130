package dataset

import (
	"strings"
	"testing"
)

// TestDatasetSource: a dataset names its source or reads the default one;
// a source name the environment variables could not spell is refused,
// naming the dataset, the field and the value.
func TestDatasetSource(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(strings.Replace(yamlSnapshot, "    relation: app.members\n", "    relation: app.members\n    source: billing\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := s.Get("members")
	if d.SourceName() != "billing" {
		t.Errorf("source %q", d.SourceName())
	}
	s, _ = Parse([]byte(yamlSnapshot))
	if d, _ := s.Get("members"); d.SourceName() != DefaultSource {
		t.Errorf("no source: %q, want %q", d.SourceName(), DefaultSource)
	}
	for _, tt := range []struct{ value, want string }{
		{"Billing", "lower snake case"},
		{"crm__eu", "no double underscore"},
		{"parameters", `must not start with "parameter"`},
		{"crm_", "lower snake case"},
	} {
		doc := strings.Replace(yamlSnapshot, "    relation: app.members\n", "    relation: app.members\n    source: "+tt.value+"\n", 1)
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), `datasets[0]: dataset members: source "`+tt.value+`"`) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("source %q: got %v, want an error naming it and %q", tt.value, err, tt.want)
		}
	}
	for _, tt := range []struct {
		shard string
		ok    bool
	}{{"eu", true}, {"01", true}, {"eu_2", true}, {"eu__2", false}, {"_eu", false}, {"EU", false}, {strings.Repeat("a", 33), false}} {
		if err := ValidShardName(tt.shard); (err == nil) != tt.ok {
			t.Errorf("shard %q: %v", tt.shard, err)
		}
	}
}
