package events

import (
	"fmt"
	"time"
)

// CommittedID is the stable id of the committed event of one generation:
// <account>/<dataset>/<day>/<generation>, dataset the dataset's ledger name
// (dataset.LedgerName: the name at contract v1, <name>.<contract> after),
// so generation 1 of a day under v1 and under v2 are two ids. Every publish
// of the event, the first and any repeat, carries it (docs/events.md).
func CommittedID(account, dataset, day string, generation int64) string {
	return fmt.Sprintf("%s/%s/%s/%d", account, dataset, day, generation)
}

// StoppedID is the stable id of a stopped event: the committed id of the
// last generation delivered before, then /stopped/ and the stop's time
// (RFC 3339, UTC, seconds): a partition may stop again after a retry.
func StoppedID(account, dataset, day string, generation int64, at time.Time) string {
	return CommittedID(account, dataset, day, generation) + "/stopped/" + at.UTC().Truncate(time.Second).Format(time.RFC3339)
}
