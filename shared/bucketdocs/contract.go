package bucketdocs

import (
	"fmt"

	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
)

// contractItems are a dataset's README lines about where it is: its folder
// and schema under its current contract and, for a contract past v1, that
// the earlier contracts' folders stay in place and are no longer written.
func (w *mdWriter) contractItems(ds dataset.Dataset) []string {
	c := ds.ContractVersion()
	root := layout.ContractRoot(w.in.Prefix, c)
	items := []string{
		fmt.Sprintf("- **Contract** `%s`: the files are in `%s%s/`.", c, root, ds.Name),
		fmt.Sprintf("- **Schema**: version %d, `%s%s/%s.json`.", ds.Version, root, layout.SchemasDir, ds.Name),
	}
	if c != dataset.DefaultContract {
		items = append(items, fmt.Sprintf("- **Earlier contracts**: `%s%s/` (and its `%s/%s.json`) stays in place and is no longer written; "+
			"the dataset is delivered again from its first day under `%s`. Point tables at the new folder.",
			w.root, ds.Name, layout.SchemasDir, ds.Name, c))
	}
	return items
}
