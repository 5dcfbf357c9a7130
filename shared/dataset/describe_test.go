package dataset

import (
	"strings"
	"testing"
)

// descriptionProblems lists what a customer would miss in ds's
// descriptions: the dataset's and every column's must be a sentence. The
// bucket README and the `_schemas/` documents show them as they are.
func descriptionProblems(ds Dataset) []string {
	var out []string
	check := func(what, s string) {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			out = append(out, what+": no description")
		case !strings.HasSuffix(s, "."):
			out = append(out, what+": description is not a sentence (no final period)")
		case len(strings.Fields(s)) < 3:
			out = append(out, what+": description too short to explain anything")
		}
	}
	check("dataset "+ds.Name, ds.Description)
	for _, c := range ds.Columns {
		check("dataset "+ds.Name+" column "+c.Name, c.Description)
	}
	return out
}

func TestDescriptions(t *testing.T) {
	t.Parallel()
	cat := shipped(t).Datasets()
	for _, ds := range cat {
		t.Run(ds.Name, func(t *testing.T) {
			for _, p := range descriptionProblems(ds) {
				t.Error(p)
			}
		})
	}
	// The check finds each kind of gap.
	base := cat[0]
	for _, tc := range []struct {
		name   string
		change func(d *Dataset)
		want   string
	}{
		{"dataset without description", func(d *Dataset) { d.Description = "" }, "dataset events: no description"},
		{"column without description", func(d *Dataset) { d.Columns[2].Description = " " }, "column occurred_at: no description"},
		{"column without a sentence", func(d *Dataset) { d.Columns[0].Description = "Event id." }, "column event_id: description too short"},
		{"no final period", func(d *Dataset) { d.Columns[0].Description = "Unique event identifier" }, "column event_id: description is not a sentence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base.clone()
			tc.change(&d)
			got := strings.Join(descriptionProblems(d), "; ")
			if !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
		})
	}
}
