package main

import (
	"fmt"
	"regexp"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/jobs"
	"github.com/daybook-dev/daybook/shared/ledger"
)

// tokenRE bounds a claim token's shape: the ledger's are 32 hex digits; a
// job names one only to prove its claim, so anything else is refused before
// it reaches a condition expression.
var tokenRE = regexp.MustCompile(`^[0-9A-Za-z_-]{1,128}$`)

// maxJobAttempt bounds a job's attempt number far above any MAX_ATTEMPTS.
const maxJobAttempt = 1000

// validateJob checks a claimed job's fields beyond jobs.Parse, as strictly
// as a manual request's: an account id of the account package's form, a
// dataset of this build's catalog, a known reason, a plausible claim token,
// attempt and generation. Every error wraps jobs.ErrMalformed (the message
// goes to the dead-letter queue) and names the field and the value. It is
// one function so that a shared job validator can replace it.
func validateJob(j jobs.Job) error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: job: %s %s: %s", jobs.ErrMalformed, field, truncate(fmt.Sprintf("%q", fmt.Sprint(v)), 80), why)
	}
	if err := j.Validate(); err != nil {
		return err
	}
	if !account.ValidID(j.AccountID) {
		return bad("account_id", j.AccountID, "not an account id (acct_ and 16 base32 characters)")
	}
	if _, err := dataset.Get(j.Dataset); err != nil {
		return bad("dataset", j.Dataset, "not a dataset of this deployment")
	}
	if !tokenRE.MatchString(j.ClaimToken) {
		return bad("claim_token", j.ClaimToken, "not a claim token (1 to 128 letters, digits, _ or -)")
	}
	if j.Attempt > maxJobAttempt {
		return bad("attempt", j.Attempt, fmt.Sprintf("above %d", maxJobAttempt))
	}
	if j.Generation < 1 {
		return bad("generation", j.Generation, "a claim's generation is at least 1")
	}
	if j.Reason != "" && !ledger.Reason(j.Reason).Valid() {
		return bad("reason", j.Reason, "not a reason (scheduled, backfill, retry, manual)")
	}
	return nil
}
