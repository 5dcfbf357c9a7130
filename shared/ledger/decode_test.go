package ledger

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/partition"
)

const (
	decodePK = "P#acct_t0123456789abcde#events"
	decodeSK = "2026-03-01"
)

// storedRow is a valid partition item as the ledger writes it, every time
// attribute set.
func storedRow() map[string]types.AttributeValue {
	item := tableKey(decodePK, decodeSK)
	for a, v := range map[string]string{
		attrAccountID: "acct_t0123456789abcde", attrDataset: "events", attrDay: decodeSK,
		attrState: string(StateRunning), attrClaimToken: "tok", attrReason: string(partition.ReasonRetry),
		attrClaimedAt: "2026-03-10T11:00:00Z", attrStartedAt: "2026-03-10T11:01:00Z",
		attrLeaseUntil: "2026-03-10T11:21:00Z", attrNextAttemptAt: "2026-03-10T10:00:00Z",
		attrCompletedAt: "2026-03-09T09:00:00Z", attrUpdatedAt: "2026-03-10T11:01:00Z",
		AttrDueAccount: "acct_t0123456789abcde", AttrDueKey: "3#2026-03-10T11:21:00Z#2026-03-01#events",
	} {
		item[a] = s(v)
	}
	item[attrAttempts] = n(2)
	item[attrGeneration] = n(4)
	return item
}

func mustTime(t *testing.T, v string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, v)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestRowFromItemMalformed: a stored value that does not parse is an error
// naming the attribute, the item's key and the value; it never reads as the
// zero value (a zero lease_until would look expired).
func TestRowFromItemMalformed(t *testing.T) {
	set := func(attr string, v types.AttributeValue) func(map[string]types.AttributeValue) {
		return func(it map[string]types.AttributeValue) { it[attr] = v }
	}
	cases := []struct {
		name   string
		mutate func(map[string]types.AttributeValue)
		attr   string // "" = decodes
		value  string // as the error shows it
	}{
		{"valid", func(map[string]types.AttributeValue) {}, "", ""},
		{"claimed_at", set(attrClaimedAt, s("yesterday")), attrClaimedAt, `"yesterday"`},
		{"started_at with a space", set(attrStartedAt, s("2026-03-10 11:01:00")), attrStartedAt, `"2026-03-10 11:01:00"`},
		{"lease_until", set(attrLeaseUntil, s("garbage")), attrLeaseUntil, `"garbage"`},
		{"lease_until with an offset", set(attrLeaseUntil, s("2026-03-10T12:21:00+01:00")), attrLeaseUntil, `"2026-03-10T12:21:00+01:00"`},
		{"next_attempt_at", set(attrNextAttemptAt, s("soon")), attrNextAttemptAt, `"soon"`},
		{"completed_at out of range", set(attrCompletedAt, s("2026-13-01T00:00:00Z")), attrCompletedAt, `"2026-13-01T00:00:00Z"`},
		{"updated_at", set(attrUpdatedAt, s("1")), attrUpdatedAt, `"1"`},
		{"day", set(attrDay, s("2026-02-30")), attrDay, `"2026-02-30"`},
		{"sk read as the day", func(it map[string]types.AttributeValue) {
			delete(it, attrDay)
			it[AttrSK] = s("03/01/2026")
		}, AttrSK, `"03/01/2026"`},
		{"due_key time", set(AttrDueKey, s("3#garbage#2026-03-01#events")), AttrDueKey, `"3#garbage#2026-03-01#events"`},
		{"due_key without a time", set(AttrDueKey, s("2##2026-03-01#events")), AttrDueKey, `"2##2026-03-01#events"`},
		{"due_key without a day", set(AttrDueKey, s("2#2026-03-10T10:00:00Z")), AttrDueKey, `"2#2026-03-10T10:00:00Z"`},
		{"attempts as a string", set(attrAttempts, s("three")), attrAttempts, `"three"`},
		{"generation not an integer", set(attrGeneration, &types.AttributeValueMemberN{Value: "1.5"}), attrGeneration, "1.5"},
		{"rerun_requested as a string", set(attrRerunRequested, s("true")), attrRerunRequested, `"true"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			item := storedRow()
			tc.mutate(item)
			row, err := rowFromItem(item)
			if tc.attr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !row.LeaseUntil.Equal(mustTime(t, "2026-03-10T11:21:00Z")) || !row.StartedAt.Equal(mustTime(t, "2026-03-10T11:01:00Z")) ||
					!row.CompletedAt.Equal(mustTime(t, "2026-03-09T09:00:00Z")) || row.Attempts != 2 || row.Generation != 4 || row.Day != civil.MustParse(decodeSK) {
					t.Errorf("row %+v", row)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v, want a malformed item (row %+v)", err, row)
			}
			key := avString(item[AttrPK]) + "/" + avString(item[AttrSK])
			for _, want := range []string{key, tc.attr + " " + tc.value} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

// TestRowFromIndexItem: an index item projects no lease or next attempt;
// the due key carries them, and the classes without a time need none.
func TestRowFromIndexItem(t *testing.T) {
	cases := []struct {
		dueKey             string
		lease, nextAttempt string // "" = zero
	}{
		{"3#2026-03-10T11:21:00Z#2026-03-01#events", "2026-03-10T11:21:00Z", ""},
		{"2#2026-03-10T10:00:00Z#2026-03-01#events", "", "2026-03-10T10:00:00Z"},
		{"0#2026-03-01#events", "", ""},
		{"1#2026-03-01#events", "", ""},
		{"9#2026-03-01#events", "", ""},
		{"", "", ""},
	}
	for _, tc := range cases {
		item := storedRow()
		delete(item, attrLeaseUntil)
		delete(item, attrNextAttemptAt)
		item[AttrDueKey] = s(tc.dueKey)
		row, err := rowFromItem(item)
		if err != nil {
			t.Errorf("%q: %v", tc.dueKey, err)
			continue
		}
		want := func(v string) time.Time {
			if v == "" {
				return time.Time{}
			}
			return mustTime(t, v)
		}
		if !row.LeaseUntil.Equal(want(tc.lease)) || !row.NextAttemptAt.Equal(want(tc.nextAttempt)) {
			t.Errorf("%q: lease %s next attempt %s, want %q %q", tc.dueKey, row.LeaseUntil, row.NextAttemptAt, tc.lease, tc.nextAttempt)
		}
	}
}

// itemDB answers GetItem with a fixed item.
type itemDB struct {
	DynamoAPI
	item map[string]types.AttributeValue
}

func (d itemDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: d.item}, nil
}

// TestWatermarkAndAccountMalformed: the watermark's through and an
// account's attributes are read the same way.
func TestWatermarkAndAccountMalformed(t *testing.T) {
	wm := func(through types.AttributeValue) map[string]types.AttributeValue {
		item := tableKey(pkWMPrefix+"acct_x", "events")
		if through != nil {
			item[attrThrough] = through
		}
		return item
	}
	acct := func(enabled types.AttributeValue) map[string]types.AttributeValue {
		item := tableKey(pkAccounts, "acct_x")
		item[attrDoc] = s(`{"id":"acct_x"}`)
		item[attrEnabled] = enabled
		return item
	}
	watermark := func(l *Ledger) error {
		_, err := l.Schedule().Watermark(context.Background(), "acct_x", "events")
		return err
	}
	account := func(l *Ledger) error { _, err := l.Accounts().GetAccount(context.Background(), "acct_x"); return err }
	cases := []struct {
		name string
		item map[string]types.AttributeValue
		read func(*Ledger) error
		want string // "" = no error; else what the error names
	}{
		{"watermark", wm(s("2026-03-05")), watermark, ""},
		{"watermark through not a day", wm(s("2026-02-30")), watermark, `WM#acct_x/events: through "2026-02-30"`},
		{"watermark through missing", wm(nil), watermark, `WM#acct_x/events: through ""`},
		{"watermark through not a string", wm(&types.AttributeValueMemberBOOL{Value: true}), watermark, "WM#acct_x/events: through true"},
		{"account", acct(&types.AttributeValueMemberBOOL{Value: true}), account, ""},
		{"account enabled not a bool", acct(s("yes")), account, `ACCOUNTS/acct_x: enabled "yes"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := New(itemDB{item: tc.item}, Config{Catalog: datasettest.Example(t), Table: "t", Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.read(l)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (!errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want a malformed item naming %s", err, tc.want)
			}
		})
	}
}

// TestCorruptedRowIsNeverReadAsZero: on the deployed table, a transition
// that meets a row with a malformed stored time fails naming it and leaves
// the row alone; it does not take the time as zero (a lease_until read as
// zero looks expired, a started_at read as zero makes Fail count an attempt
// twice).
func TestCorruptedRowIsNeverReadAsZero(t *testing.T) {
	cases := []struct {
		name, attr, value string
		act               func(f *fixture) error
	}{
		{"get", attrLeaseUntil, "garbage", func(f *fixture) error { _, err := f.l.Partitions().Get(f.ctx, f.key); return err }},
		{"claim after the lease", attrLeaseUntil, "garbage", func(f *fixture) error {
			f.clk.Advance(testLease + time.Minute)
			_, err := f.l.Partitions().Claim(f.ctx, f.key, partition.ReasonRetry)
			return err
		}},
		{"fail", attrStartedAt, "yesterday", func(f *fixture) error {
			_, err := f.l.Partitions().Fail(f.ctx, f.key, f.token, errors.New("boom"))
			return err
		}},
		{"complete", attrClaimedAt, "noon", func(f *fixture) error {
			_, err := f.l.Partitions().Complete(f.ctx, f.key, "stale", Result{})
			return err
		}},
		{"due", AttrDueKey, "3#0000-bad#2026-03-01#events", func(f *fixture) error { _, _, err := f.l.Partitions().Due(f.ctx, f.key.AccountID, 10); return err }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock(t0)
			l, db := newTestLedger(t, clk)
			f := &fixture{t: t, ctx: context.Background(), l: l, clk: clk,
				key: partition.Key{AccountID: testAccount(t, string(rune('a'+i))), Dataset: "events", Day: day1}}
			f.started()
			_, err := db.UpdateItem(f.ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(l.cfg.Table),
				Key:                       rowKey(f.key),
				UpdateExpression:          aws.String("SET #a = :v"),
				ExpressionAttributeNames:  map[string]string{"#a": tc.attr},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(tc.value)},
			})
			f.must(err)

			err = tc.act(f)
			if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrConflict) || errors.Is(err, ErrClaimLost) {
				t.Fatalf("error %v, want a malformed item and no refusal", err)
			}
			for _, want := range []string{partitionPK(f.key.AccountID, f.key.Dataset) + "/" + f.key.Day.String(), tc.attr, tc.value} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			out, err := db.GetItem(f.ctx, &dynamodb.GetItemInput{TableName: aws.String(l.cfg.Table), Key: rowKey(f.key), ConsistentRead: aws.Bool(true)})
			f.must(err)
			if avString(out.Item[attrState]) != string(StateRunning) || avString(out.Item[attrClaimToken]) != f.token || avString(out.Item[tc.attr]) != tc.value {
				t.Errorf("row changed: %v", out.Item)
			}
		})
	}
}
