package ops

import (
	"slices"
	"strings"

	"github.com/daybook-dev/daybook/shared/manifest"
)

// Failures are grouped by the reason code the delivery manifest writes
// (manifest.CauseOf of the ledger's error), so a bad bucket is one line,
// "bucket does not exist", with its fix, however many partitions it failed;
// the raw errors stay behind it for whoever needs them. The console's
// account page and `daybook status --account` show the same groups.

// cause is an operator's reading of a code: what happened and what to do.
type cause struct{ what, fix string }

var causes = map[manifest.Code]cause{
	manifest.CodeDestinationMissing: {"bucket does not exist",
		"check destination.bucket (and endpoint, region) with daybook account get, fix it with daybook account put --update, check it with daybook account test, then retry them"},
	manifest.CodeDestinationDenied: {"writing to the bucket was refused",
		"check the role's trust policy (external id), the bucket policy and its KMS key with daybook account test, then retry them"},
	manifest.CodeDestinationMisconfigured: {"the bucket's owning AWS account is unknown; nothing was written",
		"set destination.expected_bucket_owner, or a role_arn that names the account (daybook account put --update), then retry them"},
	manifest.CodeDestinationCrowded: {"the day folder holds more objects (or incomplete uploads) than an export lists; the day was not delivered",
		"someone else writes into the account's prefix: the raw error names the folder; have the customer remove what daybook did not write there, then retry them"},
	manifest.CodeSourceUnavailable: {"the source database could not be read",
		"check the source (its DSN, network, credentials and load); attempts continue by themselves until they run out, then retry them"},
	manifest.CodeSchemaMismatch: {"source rows do not fit the dataset's schema or day",
		"fix the source rows or the catalog's declaration, then retry them; nothing was delivered for these days"},
	manifest.CodeTimedOut: {"the export ran out of time (or its exporter died)",
		"check the exporter's timeout and memory and the day's size (SLICE_ROWS splits large days); attempts continue, then retry them"},
	manifest.CodeInternal: {"unexpected error inside daybook",
		"read the raw error and the exporter's log for the run; retry them once the cause is fixed"},
	manifest.CodeTableBroken: {"the files were delivered; the dataset's Iceberg table did not take them (its metadata in the bucket cannot be used)",
		"find out who changed the table's metadata (the raw error names the object), then run the repair command it names: daybook table repair --account ID --dataset NAME shows what it would do, --yes does it"},
}

// FailurePartition is one failed or stopped partition of a group.
type FailurePartition struct {
	Dataset string `json:"dataset"`
	Day     string `json:"day"`
	Phase   Phase  `json:"state"`
}

// FailureGroup is every failed or stopped partition with one reason code,
// or every completed one whose dataset's Iceberg table did not take it
// (manifest.CodeTableBroken).
type FailureGroup struct {
	Code manifest.Code `json:"code"`
	// What is one line on what happened, Fix what to do about it.
	What string `json:"what"`
	Fix  string `json:"fix"`
	// Partitions are the failed or stopped partitions, Stopped how many of
	// them stopped retrying.
	Partitions []FailurePartition `json:"partitions"`
	Stopped    int                `json:"stopped"`
	// Errors are the distinct raw errors (without the code), most common
	// first, at most MaxGroupErrors.
	Errors []string `json:"errors"`
}

// MaxGroupErrors bounds the raw errors a group keeps.
const MaxGroupErrors = 5

// GroupFailures groups the failed and stopped partitions of days (the
// account's days per dataset) by reason code, the most partitions first.
func GroupFailures(datasets []DatasetDays) []FailureGroup {
	byCode := map[manifest.Code]*FailureGroup{}
	counts := map[manifest.Code]map[string]int{}
	var order []manifest.Code
	for _, ds := range datasets {
		for _, d := range ds.Days {
			text := d.Error
			switch {
			case d.State == Failed, d.State == Stopped:
			case d.TableError != "":
				text = d.TableError
			default:
				continue
			}
			code := manifest.CauseOf(text)
			if d.TableError != "" && text == d.TableError {
				code = manifest.CodeTableBroken
			}
			g := byCode[code]
			if g == nil {
				c := causes[code]
				g = &FailureGroup{Code: code, What: c.what, Fix: c.fix}
				byCode[code], counts[code] = g, map[string]int{}
				order = append(order, code)
			}
			g.Partitions = append(g.Partitions, FailurePartition{Dataset: ds.Dataset, Day: d.Day, Phase: d.State})
			if d.State == Stopped {
				g.Stopped++
			}
			raw := strings.TrimPrefix(text, string(code)+": ")
			if counts[code][raw] == 0 {
				g.Errors = append(g.Errors, raw)
			}
			counts[code][raw]++
		}
	}
	out := make([]FailureGroup, 0, len(order))
	for _, code := range order {
		g := byCode[code]
		c := counts[code]
		slices.SortStableFunc(g.Errors, func(a, b string) int { return c[b] - c[a] })
		if len(g.Errors) > MaxGroupErrors {
			g.Errors = g.Errors[:MaxGroupErrors]
		}
		out = append(out, *g)
	}
	slices.SortStableFunc(out, func(a, b FailureGroup) int { return len(b.Partitions) - len(a.Partitions) })
	return out
}

// CauseOfError is the reason code of a ledger error and its operator
// reading (what happened, what to do), for one partition.
func CauseOfError(lastError string) (code manifest.Code, what, fix string) {
	code = manifest.CauseOf(lastError)
	c := causes[code]
	return code, c.what, c.fix
}

// RawError is a ledger error without its leading reason code.
func RawError(lastError string) string {
	return strings.TrimPrefix(lastError, string(manifest.CauseOf(lastError))+": ")
}
