package events

import (
	"time"

	"github.com/daybook-dev/daybook/shared/partition"
)

// StoppedOf is the event detail of a partition that stopped retrying. The
// last error stays out: it may name the sender's internals (a source host,
// a query), and the event may be forwarded to the customer; `daybook
// history` shows it to an operator.
func StoppedOf(s partition.Stop) Stopped {
	return Stopped{Version: DetailVersion, ID: StoppedID(s.AccountID, s.Dataset, s.Day.String(), s.Generation, s.At), Account: s.AccountID, Dataset: s.Dataset, Day: s.Day.String(), Attempts: s.Attempts,
		Generation: s.Generation, Reason: string(s.Reason), Cause: s.Cause, StoppedAt: s.At.UTC().Truncate(time.Second)}
}
