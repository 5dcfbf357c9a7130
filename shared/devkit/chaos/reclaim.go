package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/partition"
)

// reclaimSweeps is how many sweeps after its lease ended a dead claim may
// still hold its row (L3: a dead claim is reclaimed after its lease).
const reclaimSweeps = 2

// expiry is a dead claim whose lease passTime ended: its token, and the
// sweep count when it ended.
type expiry struct {
	token  string
	sweeps int
}

// noteExpired records a claim whose lease was just ended.
func (p *pipeline) noteExpired(r ledger.Row) {
	if p.expired == nil {
		p.expired = map[partition.Key]expiry{}
	}
	p.expired[r.Key] = expiry{token: r.ClaimToken, sweeps: p.rep.Sweeps}
}

// checkReclaimed runs after each round's sweeps: every claim whose lease
// ended must have left its row (reclaimed by a sweep, or taken by a manual
// run) within reclaimSweeps sweeps.
func (p *pipeline) checkReclaimed(ctx context.Context) error {
	if len(p.expired) == 0 {
		return nil
	}
	rows, err := p.rows(ctx)
	if err != nil {
		return err
	}
	byKey := make(map[partition.Key]ledger.Row, len(rows))
	for _, r := range rows {
		byKey[r.Key] = r
	}
	var reclaimed int
	var problems []string
	p.expired, reclaimed, problems = overdueClaims(p.expired, byKey, p.rep.Sweeps)
	p.rep.Checked.Reclaimed += reclaimed
	p.rep.Problems = append(p.rep.Problems, problems...)
	return nil
}

// overdueClaims sorts the expired claims by the rows as read after sweeps
// sweeps: a row no longer running under the expired token was reclaimed; one
// still held by it after reclaimSweeps sweeps is a problem (and dropped, so
// it is reported once); the others wait. It returns the claims still
// waiting.
func overdueClaims(expired map[partition.Key]expiry, rows map[partition.Key]ledger.Row, sweeps int) (waiting map[partition.Key]expiry, reclaimed int, problems []string) {
	waiting = map[partition.Key]expiry{}
	for _, k := range slices.SortedFunc(maps.Keys(expired), func(a, b partition.Key) int { return strings.Compare(a.String(), b.String()) }) {
		e := expired[k]
		r, ok := rows[k]
		switch {
		case !ok || r.State != ledger.StateRunning || r.ClaimToken != e.token:
			reclaimed++
		case sweeps-e.sweeps >= reclaimSweeps:
			problems = append(problems, fmt.Sprintf("%s: expired claim not reclaimed within %d sweeps (still running under it after %d)", k, reclaimSweeps, sweeps-e.sweeps))
		default:
			waiting[k] = e
		}
	}
	return waiting, reclaimed, problems
}
