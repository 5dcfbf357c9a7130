package ledger

// The run states that partition rows (run.go, claim.go) and slice items
// (slicerun.go) share: a run holds its item under a token while its state
// is running, until its lease ends; a run that ended gives up its token and
// lease, and a failed one records its error. Each condition and update here
// is written once and used by both.

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

// maxErrorLen bounds a stored error message.
const maxErrorLen = 1000

// errorText is the stored form of a run's error: its message, at most
// maxErrorLen bytes.
func errorText(cause error) string {
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	if len(msg) > maxErrorLen {
		msg = msg[:maxErrorLen]
	}
	return msg
}

// holds: running under the claim with token (Row.heldBy is the same test on
// a row already read).
func holds(token string) expression.ConditionBuilder {
	return expression.And(name(attrClaimToken).Equal(val(token)), name(attrState).Equal(val(string(StateRunning))))
}

// deadRun: running under a lease that ended before nowS.
func deadRun(nowS string) expression.ConditionBuilder {
	return expression.And(name(attrState).Equal(val(string(StateRunning))), name(attrLeaseUntil).LessThan(val(nowS)))
}

// live: running under a lease that has not ended at nowS.
func live(nowS string) expression.ConditionBuilder {
	return expression.And(name(attrState).Equal(val(string(StateRunning))), name(attrLeaseUntil).GreaterThanEqual(val(nowS)))
}

// notLive: absent, or not running, or running under an expired lease.
func notLive(nowS string) expression.ConditionBuilder {
	return expression.Or(name(AttrPK).AttributeNotExists(), name(attrState).NotEqual(val(string(StateRunning))), name(attrLeaseUntil).LessThan(val(nowS)))
}

// endRun is the part of an update that ends a run: its token and lease
// go, stamped nowS.
func endRun(upd expression.UpdateBuilder, nowS string) expression.UpdateBuilder {
	return upd.Set(name(attrUpdatedAt), val(nowS)).Remove(name(attrClaimToken)).Remove(name(attrLeaseUntil))
}
