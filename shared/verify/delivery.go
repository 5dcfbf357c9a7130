package verify

import (
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/manifest"
)

// deliverySubject names the delivery manifest in findings.
const deliverySubject = "delivery manifest"

// delivery reports what the day's delivery manifest says about the
// dataset. It never fails the partition on its own (the manifest is
// rewritten after each export, so it may lag a moment behind _SUCCESS),
// except when it says the dataset is delivered at a generation the
// partition does not have.
func (c *checker) delivery() error {
	key := layout.DeliveryManifestKey(c.t.Prefix, c.t.Day)
	b, found, err := c.get(key, manifest.MaxDeliveryBytes)
	if err != nil {
		return err
	}
	if !found {
		c.r.add(LevelNote, deliverySubject, "none for %s yet", c.t.Day)
		return nil
	}
	d, err := manifest.DecodeDelivery(b)
	if err != nil {
		c.r.add(LevelNote, deliverySubject, "unreadable: %v", err)
		return nil
	}
	day := "day partial (complete: false)"
	if d.Complete {
		day = "day complete"
	}
	for _, x := range d.DatasetsDelivered {
		if x.Name != c.t.name() || x.Contract != "" && dataset.LedgerName(x.Name, x.Contract) != c.t.Dataset {
			continue // another dataset, or this one's folder under another contract
		}
		reseed := ""
		if x.Reseed {
			reseed = "; reseed: drop your copy of the dataset and load it again"
		}
		switch {
		case !c.committed:
			c.r.add(LevelNote, deliverySubject, "says delivered at generation %d, but there is no _SUCCESS now: it is being written again (%s)", x.Generation, day)
		case x.Generation > c.r.Generation:
			c.r.add(LevelProblem, deliverySubject, "says generation %d was delivered, the partition commits %d (%s)", x.Generation, c.r.Generation, day)
		case x.Generation < c.r.Generation:
			c.r.add(LevelNote, deliverySubject, "still says generation %d; it is rewritten after each export (%s)", x.Generation, day)
		default:
			c.r.add(LevelOK, deliverySubject, "delivered, generation %d, %d rows (%s%s)", x.Generation, x.Rows, day, reseed)
		}
		return nil
	}
	for _, x := range d.DatasetsMissing {
		if x.Name == c.t.name() {
			c.listedMissing = true
			c.r.add(LevelNote, deliverySubject, "missing: %s (%s)", x.Reason, day)
			return nil
		}
	}
	for _, x := range d.DatasetsLatestOnly {
		if x.Name == c.t.name() {
			c.latestOnly = !c.committed
			c.r.add(LevelNote, deliverySubject, "not delivered for this day by design: %s (%s)", x.Reason, day)
			return nil
		}
	}
	c.r.add(LevelNote, deliverySubject, "does not list %s: not a dataset you receive (%s)", c.t.Dataset, day)
	return nil
}
