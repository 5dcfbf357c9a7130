package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The shared claim budget: sweeps that run at once (a scheduled sweep
// delivered twice, a manual one, the fan-out workers of two scheduled
// sweeps) draw their claims from one budget item, pk=STATS
// sk=BUDGET#<scope>, instead of each claiming a whole budget of its own.
// The first sweep of a window opens it with its budget (budget_total) until
// budget_until; every sweep inside the window adds what it wants to
// budget_used and is granted what was left before its addition, so the
// grants of one window never sum past its total. A window is one atomic
// update per sweep (two when it opens).
const skBudgetPrefix = "BUDGET#"

const (
	attrBudgetUntil = "budget_until"
	attrBudgetTotal = "budget_total"
	attrBudgetUsed  = "budget_used"
)

// ReserveClaims grants up to want claims from the shared budget of scope:
// from the window open now, or, if none is, from a new one of total claims
// lasting window. want 0 only opens the window (a sweep about to fan out
// its budget to workers). It returns how many claims were granted.
func (l Schedule) ReserveClaims(ctx context.Context, scope string, window time.Duration, total, want int) (int, error) {
	if scope == "" || window <= 0 || total < 0 || want < 0 {
		return 0, fmt.Errorf("ledger: reserve claims: scope %q, window %s, total %d, want %d", scope, window, total, want)
	}
	key := tableKey(pkStats, skBudgetPrefix+scope)
	now := l.now()
	nowS := fmtTime(now)
	for range 2 {
		item, err := l.update(ctx, key, expression.Add(name(attrBudgetUsed), val(want)),
			name(attrBudgetUntil).GreaterThan(val(nowS)), types.ReturnValueAllNew)
		if err == nil {
			rec, err := decodeItem[budgetRecord](item)
			if err != nil {
				return 0, err
			}
			return max(0, min(want, rec.Total-(rec.Used-want))), nil
		}
		if !errors.Is(err, errCondition) {
			return 0, err
		}
		granted := min(want, total)
		open := expression.Set(name(attrBudgetUntil), val(fmtTime(now.Add(window)))).
			Set(name(attrBudgetTotal), val(total)).
			Set(name(attrBudgetUsed), val(granted)).
			Set(name(attrUpdatedAt), val(nowS))
		_, err = l.update(ctx, key, open,
			expression.Or(name(attrBudgetUntil).AttributeNotExists(), name(attrBudgetUntil).LessThanEqual(val(nowS))), types.ReturnValueNone)
		if err == nil {
			return granted, nil
		}
		if !errors.Is(err, errCondition) {
			return 0, err
		}
		// Another sweep opened the window meanwhile: draw from it.
	}
	return 0, fmt.Errorf("ledger: reserve claims of %s: the budget window changed twice under the reservation", scope)
}

type budgetRecord struct {
	Until string `dynamodbav:"budget_until"`
	Total int    `dynamodbav:"budget_total"`
	Used  int    `dynamodbav:"budget_used"`
}
