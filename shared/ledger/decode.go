package ledger

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

// malformed is the error for attribute attr of item holding value (as
// stored, already quoted if a string).
func malformed(item map[string]types.AttributeValue, attr, value string, err error) error {
	return fmt.Errorf("%w %s/%s: %s %s: %w", ErrMalformed, avString(item[AttrPK]), avString(item[AttrSK]), attr, value, err)
}

// decodeItem unmarshals item into its stored form T. A value of the wrong
// type (a string where a number is stored, a number that is not an integer)
// is an error naming the attribute, the key and the value.
func decodeItem[T any](item map[string]types.AttributeValue) (T, error) {
	var rec T
	err := attributevalue.UnmarshalMap(item, &rec)
	if err == nil {
		return rec, nil
	}
	// The SDK's error names neither the attribute nor the item: find the
	// attribute by decoding each one alone.
	for _, a := range slices.Sorted(maps.Keys(item)) {
		var probe T
		if aerr := attributevalue.UnmarshalMap(map[string]types.AttributeValue{a: item[a]}, &probe); aerr != nil {
			return rec, malformed(item, a, avText(item[a]), aerr)
		}
	}
	return rec, fmt.Errorf("%w %s/%s: %w", ErrMalformed, avString(item[AttrPK]), avString(item[AttrSK]), err)
}

// avText shows a stored value in an error.
func avText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	}
	return fmt.Sprintf("%T", v)
}

// parseTime reads a stored time; "" (an absent attribute) is the zero time.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(timeFormat, s)
}

// readBack reads the row a write returned. The write stands either way; the
// error says so, so that a caller does not take a transition that was made
// for one that was refused.
func readBack(op string, key partition.Key, item map[string]types.AttributeValue) (Row, error) {
	row, err := rowFromItem(item)
	if err != nil {
		return Row{}, fmt.Errorf("ledger: %s %s took effect, but the row it returned cannot be read: %w", op, key, err)
	}
	return row, nil
}

// attemptFromItem reads a history item of the partition key. A time that
// does not parse is an error naming the attribute, the item's key and the
// value, as for rows.
func attemptFromItem(key partition.Key, item map[string]types.AttributeValue) (Attempt, error) {
	r, err := decodeItem[attemptRecord](item)
	if err != nil {
		return Attempt{}, err
	}
	a := Attempt{
		Key: key, Attempt: r.Attempt, Outcome: Outcome(r.Outcome), Reason: partition.Reason(r.Reason),
		Generation: r.Generation, Rows: r.Rows, Bytes: r.Bytes, Files: r.Files, DurationMS: r.DurationMS,
		ManifestKey: r.ManifestKey, Error: r.Error, RequestedBy: r.RequestedBy,
	}
	for _, f := range []struct {
		attr, value string
		dst         *time.Time
	}{
		{attrClaimedAt, r.ClaimedAt, &a.ClaimedAt},
		{attrStartedAt, r.StartedAt, &a.StartedAt},
		{attrFinishedAt, r.FinishedAt, &a.FinishedAt},
	} {
		if *f.dst, err = parseTime(f.value); err != nil {
			return Attempt{}, malformed(item, f.attr, strconv.Quote(f.value), err)
		}
	}
	return a, nil
}

// rowFromItem reads a partition row from a table or index item.
func rowFromItem(item map[string]types.AttributeValue) (Row, error) {
	r, err := decodeItem[rowRecord](item)
	if err != nil {
		return Row{}, err
	}
	row := Row{
		Key:                 partition.Key{AccountID: r.AccountID, Dataset: r.Dataset},
		State:               State(r.State),
		Attempts:            r.Attempts,
		ClaimToken:          r.ClaimToken,
		LastError:           r.LastError,
		TableError:          r.TableError,
		Stopped:             r.Stopped,
		SlicePlanned:        r.SlicePlanned,
		Generation:          r.Generation,
		GenReserved:         r.GenReserved,
		Rows:                r.Rows,
		Bytes:               r.Bytes,
		Files:               r.Files,
		ManifestKey:         r.ManifestKey,
		DurationMS:          r.DurationMS,
		Reason:              partition.Reason(r.Reason),
		RequestedBy:         r.RequestedBy,
		RerunRequested:      r.RerunRequested,
		DueKey:              r.DueKey,
		ReexportRequestedBy: r.ReexportBy,
	}
	for _, f := range []struct {
		attr, value string
		dst         *time.Time
	}{
		{attrClaimedAt, r.ClaimedAt, &row.ClaimedAt},
		{attrStartedAt, r.StartedAt, &row.StartedAt},
		{attrLeaseUntil, r.LeaseUntil, &row.LeaseUntil},
		{attrNextAttemptAt, r.NextAttemptAt, &row.NextAttemptAt},
		{attrCompletedAt, r.CompletedAt, &row.CompletedAt},
		{attrUpdatedAt, r.UpdatedAt, &row.UpdatedAt},
		{attrReexportAt, r.ReexportAt, &row.ReexportRequestedAt},
	} {
		if *f.dst, err = parseTime(f.value); err != nil {
			return Row{}, malformed(item, f.attr, strconv.Quote(f.value), err)
		}
	}
	dayAttr, day := attrDay, r.Day
	if day == "" {
		dayAttr, day = AttrSK, r.SK
	}
	if day != "" {
		if row.Day, err = civil.Parse(day); err != nil {
			return Row{}, malformed(item, dayAttr, strconv.Quote(day), err)
		}
	}
	// Index items project only some attributes; the due key of a failed
	// (2#) or running (3#) row carries its next attempt or lease.
	if class, rest, _ := strings.Cut(r.DueKey, "#"); class+"#" == dueFailed || class+"#" == dueRunning {
		ts, _, ok := strings.Cut(rest, "#")
		at, err := parseTime(ts)
		if err == nil && (!ok || at.IsZero()) {
			err = fmt.Errorf("want %s<time>#<day>#<dataset>", class+"#")
		}
		if err != nil {
			return Row{}, malformed(item, AttrDueKey, strconv.Quote(r.DueKey), err)
		}
		dst := &row.NextAttemptAt
		if class+"#" == dueRunning {
			dst = &row.LeaseUntil
		}
		if dst.IsZero() {
			*dst = at
		}
	}
	if err := readLateData(&row, r, item); err != nil {
		return Row{}, err
	}
	return row, nil
}
