package ledgertest

import (
	"slices"
	"testing"
)

// TestItemKeys: the proxy locks the one item of a single write, every item
// of a transaction in key order without repeats, and nothing for a read.
func TestItemKeys(t *testing.T) {
	for _, tc := range []struct {
		name, op, body string
		want           []string
	}{
		{"update", "UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"A"},"sk":{"S":"1"}}}`, []string{"t|A|1"}},
		{"put", "PutItem", `{"TableName":"t","Item":{"pk":{"S":"A"},"sk":{"S":"2"},"x":{"N":"1"}}}`, []string{"t|A|2"}},
		{"transaction", "TransactWriteItems", `{"TransactItems":[
			{"Update":{"TableName":"t","Key":{"pk":{"S":"GUARDS"},"sk":{"S":"p#b"}}}},
			{"Put":{"TableName":"t","Item":{"pk":{"S":"AE#x"},"sk":{"S":"1"}}}},
			{"Delete":{"TableName":"t","Key":{"pk":{"S":"GUARDS"},"sk":{"S":"p#a"}}}},
			{"ConditionCheck":{"TableName":"t","Key":{"pk":{"S":"ACCOUNTS"},"sk":{"S":"x"}}}},
			{"Update":{"TableName":"t","Key":{"pk":{"S":"GUARDS"},"sk":{"S":"p#a"}}}}]}`,
			[]string{"t|ACCOUNTS|x", "t|AE#x|1", "t|GUARDS|p#a", "t|GUARDS|p#b"}},
		{"read", "GetItem", `{"TableName":"t","Key":{"pk":{"S":"A"},"sk":{"S":"1"}}}`, nil},
		{"unparsable", "TransactWriteItems", `{`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := itemKeys(tc.op, []byte(tc.body), []string{"pk", "sk"}); !slices.Equal(got, tc.want) {
				t.Errorf("itemKeys = %q, want %q", got, tc.want)
			}
		})
	}
}
