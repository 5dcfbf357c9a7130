package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/daybook-dev/daybook/shared/civil"
)

// Table layout names, exported so tests can check the deployed table.
const (
	AttrPK         = "pk"
	AttrSK         = "sk"
	IndexDue       = "due"
	AttrDueAccount = "due_account"
	AttrDueKey     = "due_key"
)

// Attribute names. Every expression, key map and hand-built item names an
// attribute through these constants (or the exported Attr* above); the
// struct tags of rowRecord, accountRecord and watermarkRecord must spell the
// same names, which TestAttributeNamesMatchRecords checks.
const (
	attrAccountID      = "account_id"
	attrDataset        = "dataset"
	attrDay            = "day"
	attrState          = "state"
	attrAttempts       = "attempts"
	attrClaimToken     = "claim_token"
	attrClaimedAt      = "claimed_at"
	attrStartedAt      = "started_at"
	attrLeaseUntil     = "lease_until"
	attrNextAttemptAt  = "next_attempt_at"
	attrLastError      = "last_error"
	attrExhausted      = "exhausted"
	attrGeneration     = "generation"
	attrGenReserved    = "generation_reserved"
	attrRows           = "rows"
	attrBytes          = "bytes"
	attrFiles          = "files"
	attrManifestKey    = "manifest_key"
	attrDurationMS     = "duration_ms"
	attrCompletedAt    = "completed_at"
	attrReason         = "reason"
	attrRerunRequested = "rerun_requested"
	attrUpdatedAt      = "updated_at"
	attrEnabled        = "enabled" // account records
	attrDoc            = "doc"     // account records: JSON of account.Account
	attrThrough        = "through" // watermarks: the last materialized day
)

const (
	pkAccounts    = "ACCOUNTS"
	pkWMPrefix    = "WM#"
	pkPartPrefix  = "P#"
	timeFormat    = "2006-01-02T15:04:05Z"
	dueQueued     = "0#"
	duePending    = "1#"
	dueFailed     = "2#"
	dueRunning    = "3#"
	dueExhausted  = "9#" // counted by CountExhausted, never read by Due
	dueUpperBound = "$"  // sorts after '#': "2#<now>$" includes every key stamped <= now
)

// rowRecord is the stored form of a partition row.
type rowRecord struct {
	PK             string `dynamodbav:"pk"`
	SK             string `dynamodbav:"sk"`
	AccountID      string `dynamodbav:"account_id"`
	Dataset        string `dynamodbav:"dataset"`
	Day            string `dynamodbav:"day"`
	State          string `dynamodbav:"state"`
	Attempts       int    `dynamodbav:"attempts"`
	ClaimToken     string `dynamodbav:"claim_token"`
	ClaimedAt      string `dynamodbav:"claimed_at"`
	StartedAt      string `dynamodbav:"started_at"`
	LeaseUntil     string `dynamodbav:"lease_until"`
	NextAttemptAt  string `dynamodbav:"next_attempt_at"`
	LastError      string `dynamodbav:"last_error"`
	Exhausted      bool   `dynamodbav:"exhausted"`
	Generation     int64  `dynamodbav:"generation"`
	GenReserved    int64  `dynamodbav:"generation_reserved"`
	Rows           int64  `dynamodbav:"rows"`
	Bytes          int64  `dynamodbav:"bytes"`
	Files          int    `dynamodbav:"files"`
	ManifestKey    string `dynamodbav:"manifest_key"`
	DurationMS     int64  `dynamodbav:"duration_ms"`
	CompletedAt    string `dynamodbav:"completed_at"`
	Reason         string `dynamodbav:"reason"`
	RerunRequested bool   `dynamodbav:"rerun_requested"`
	UpdatedAt      string `dynamodbav:"updated_at"`
	DueAccount     string `dynamodbav:"due_account"`
	DueKey         string `dynamodbav:"due_key"`
}

// accountRecord is the stored form of an account (pk=ACCOUNTS, sk=<id>).
type accountRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	AccountID string `dynamodbav:"account_id"`
	Enabled   bool   `dynamodbav:"enabled"`
	Doc       string `dynamodbav:"doc"`
	UpdatedAt string `dynamodbav:"updated_at"`
}

// watermarkRecord is the stored form of a watermark (pk=WM#<account>,
// sk=<dataset>).
type watermarkRecord struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	AccountID string `dynamodbav:"account_id"`
	Dataset   string `dynamodbav:"dataset"`
	Through   string `dynamodbav:"through"`
	UpdatedAt string `dynamodbav:"updated_at"`
}

func rowFromItem(item map[string]types.AttributeValue) (Row, error) {
	var r rowRecord
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return Row{}, fmt.Errorf("ledger: decode row: %w", err)
	}
	row := Row{
		Key:            Key{AccountID: r.AccountID, Dataset: r.Dataset},
		State:          State(r.State),
		Attempts:       r.Attempts,
		ClaimToken:     r.ClaimToken,
		ClaimedAt:      parseTime(r.ClaimedAt),
		StartedAt:      parseTime(r.StartedAt),
		LeaseUntil:     parseTime(r.LeaseUntil),
		NextAttemptAt:  parseTime(r.NextAttemptAt),
		LastError:      r.LastError,
		Exhausted:      r.Exhausted,
		Generation:     r.Generation,
		GenReserved:    r.GenReserved,
		Rows:           r.Rows,
		Bytes:          r.Bytes,
		Files:          r.Files,
		ManifestKey:    r.ManifestKey,
		DurationMS:     r.DurationMS,
		CompletedAt:    parseTime(r.CompletedAt),
		Reason:         Reason(r.Reason),
		RerunRequested: r.RerunRequested,
		UpdatedAt:      parseTime(r.UpdatedAt),
		DueKey:         r.DueKey,
	}
	day := r.Day
	if day == "" {
		day = r.SK
	}
	if day != "" {
		d, err := civil.Parse(day)
		if err != nil {
			return Row{}, fmt.Errorf("ledger: row %s: %w", r.PK, err)
		}
		row.Day = d
	}
	// Index items project only some attributes; the due key carries the time.
	if parts := strings.SplitN(r.DueKey, "#", 3); len(parts) == 3 {
		switch parts[0] + "#" {
		case dueFailed:
			if row.NextAttemptAt.IsZero() {
				row.NextAttemptAt = parseTime(parts[1])
			}
		case dueRunning:
			if row.LeaseUntil.IsZero() {
				row.LeaseUntil = parseTime(parts[1])
			}
		}
	}
	return row, nil
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: fmt.Sprint(v)}
}

func tableKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: s(pk), AttrSK: s(sk)}
}

func rowKey(k Key) map[string]types.AttributeValue {
	return tableKey(partitionPK(k.AccountID, k.Dataset), k.Day.String())
}

func partitionPK(account, dataset string) string {
	return pkPartPrefix + account + "#" + dataset
}

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(timeFormat, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func dueKey(state State, day civil.Date, dataset string, at time.Time) string {
	switch state {
	case StateQueued:
		return dueQueued + day.String() + "#" + dataset
	case StatePending:
		return duePending + day.String() + "#" + dataset
	case StateFailed:
		return dueFailed + fmtTime(at) + "#" + day.String() + "#" + dataset
	case StateRunning:
		return dueRunning + fmtTime(at) + "#" + day.String() + "#" + dataset
	}
	return ""
}

// exhaustedDueKey is the due key of a failed row that stopped retrying: in
// the index so CountExhausted can count it, outside every range Due reads.
func exhaustedDueKey(day civil.Date, dataset string) string {
	return dueExhausted + day.String() + "#" + dataset
}
