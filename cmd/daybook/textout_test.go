package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/datasettest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/cli"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Acme Corp":                 "Acme Corp",
		"Société — 東京":              "Société — 東京",
		"evil\x1b[2J":               `evil\x1b[2J`,
		"a\nacct_forged\t9":         `a\nacct_forged\t9`,
		"rtl\u202eeman":             `rtl\u202eeman`,
		"bad\xffbyte":               `bad\xffbyte`,
		"bell\a and del\x7f":        `bell\a and del\x7f`,
		"":                          "",
		"zero\u200bwidth, \u00a0nb": `zero\u200bwidth, ` + "\u00a0nb",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestForgedNameIsEscapedEverywhere: an account whose stored name carries a
// terminal escape and a newline (stored before names were checked: written
// here straight to the table) is shown escaped by status, account list and
// account get, so it forges no row and rewrites no screen. On the old code
// the name went to the terminal as it was: the newline started a forged
// status row.
func TestForgedNameIsEscapedEverywhere(t *testing.T) {
	s := deployed(t)
	acct := s.newAccount(t, nil)
	const forged = "evil\x1b[2J\x1b[H\nacct_forgedforgedfor  forged  events  999"
	acct.Name = forged
	doc, _ := json.Marshal(acct)
	_, err := ledgerClient(s).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(s.outputs["LedgerTableName"]),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "ACCOUNTS"}, "sk": &types.AttributeValueMemberS{Value: acct.ID}},
		UpdateExpression:          aws.String("SET doc = :d"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberS{Value: string(doc)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if (account.Account{Name: forged}).ValidateShape(datasettest.Example(t)) == nil {
		t.Fatal("the forged name is valid")
	}
	// account put built the summary with the valid name; the next sweep
	// refreshes it from the record as stored.
	if _, err := s.ledgerAt(t, testNow, 3).Fleet().Refresh(context.Background(), acct.ID); err != nil {
		t.Fatal(err)
	}
	a, _, _ := testApp(t)
	for _, args := range [][]string{
		{"status", "--search", acct.ID}, {"status", "--account", acct.ID}, {"account", "list"}, {"account", "get", acct.ID},
		{"account", "history", acct.ID},
	} {
		r := s.run(t, a, args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		if strings.ContainsRune(r.stdout+r.stderr, '\x1b') {
			t.Errorf("%v printed an escape sequence:\n%q", args, r.stdout+r.stderr)
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(line, "acct_forgedforgedfor") {
				t.Errorf("%v printed a forged row: %q", args, line)
			}
		}
		if args[0] != "account" || args[1] != "history" {
			if !strings.Contains(r.stdout, `evil\x1b[2J\x1b[H\nacct_forgedforgedfor`) {
				t.Errorf("%v does not show the name escaped:\n%s", args, r.stdout)
			}
		}
	}
	// Saving it again is refused until it is renamed, and the refusal
	// quotes the name.
	if r := s.run(t, a, "account", "disable", acct.ID); r.code != cli.ExitError || strings.ContainsRune(r.stderr, '\x1b') || !strings.Contains(r.stderr, `name "evil\x1b[2J`) {
		t.Errorf("disable: exit %d\n%q", r.code, r.stderr)
	}
}
