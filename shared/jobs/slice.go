package jobs

import (
	"fmt"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/dataset"
	"github.com/daybook-dev/daybook/shared/partition"
)

// KindSlice is a slice of a partition too large for one exporter run (E7).
const KindSlice = "slice"

// Slice asks the exporter to run slice Slice (from 0) of the Slices slices
// the partition's run planned under its claim ClaimToken for Generation.
// The exporter sends one per slice to its own queue; the ledger's slice
// items hold the rest of the plan.
type Slice struct {
	Kind       string `json:"kind"`
	AccountID  string `json:"account_id"`
	Dataset    string `json:"dataset"`
	Day        string `json:"day"`
	ClaimToken string `json:"claim_token"`
	Generation int64  `json:"generation"`
	Slice      int    `json:"slice"`
	Slices     int    `json:"slices"`
}

// Validate checks the message's fields as strictly as the exporter writes
// them. Errors are *FieldError wrapping ErrMalformed.
func (s Slice) Validate(catalog *dataset.Set) error {
	if err := checkAccountID(s.AccountID); err != nil {
		return err
	}
	if _, err := knownDataset(catalog, s.Dataset); err != nil {
		return err
	}
	if _, err := parseDay("day", s.Day); err != nil {
		return err
	}
	switch {
	case !claimTokenRE.MatchString(s.ClaimToken):
		return malformed("claim_token", s.ClaimToken, "is not a claim token (32 lowercase hex digits)")
	case s.Generation < 1:
		return malformed("generation", fmt.Sprint(s.Generation), "is not a claimed generation (want >= 1)")
	case s.Slices < 2 || s.Slices > partition.MaxSlices:
		return malformed("slices", fmt.Sprint(s.Slices), fmt.Sprintf("is not a number of slices (2 to %d)", partition.MaxSlices))
	case s.Slice < 0 || s.Slice >= s.Slices:
		return malformed("slice", fmt.Sprint(s.Slice), fmt.Sprintf("is not a slice of %d (0 to %d)", s.Slices, s.Slices-1))
	}
	return nil
}

// DayValue is the slice's day, parsed.
func (s Slice) DayValue() civil.Date { d, _ := civil.Parse(s.Day); return d }
