package ledger

import (
	"context"
	"fmt"

	"github.com/daybook-dev/daybook/shared/account"
)

// EnsureGuards gives account id the isolation guards it should hold and
// does not: an account saved before guard items existed, or before a kind
// of guard was added, holds none (or not that kind) until its next save,
// and until then another account may take its prefix, role or tenant. The
// guards are the ones every save writes (account.Guards), and they are
// written the way every save writes them (saveAccount: one transaction with
// the account record, at the version read, and an event in its history by
// by). An account that holds exactly its guards is not written, so a second
// call changes nothing; it reports whether it wrote. A guard another
// account holds is ErrIsolation, naming both, as for any save.
func (l Accounts) EnsureGuards(ctx context.Context, id, by string) (bool, error) {
	old, held, err := l.readAccount(ctx, id)
	if err != nil {
		return false, err
	}
	want, err := old.Guards(l.cfg.Stage)
	if err != nil {
		return false, fmt.Errorf("account %s: %w", id, err)
	}
	if holdsExactly(held, want) {
		return false, nil
	}
	if _, err := l.saveAccount(ctx, &storedAccount{old, held}, old, by, false); err != nil {
		return false, err
	}
	return true, nil
}

// holdsExactly reports whether held is want, guard for guard and hold for
// hold.
func holdsExactly(held map[string]account.Hold, want []account.Guard) bool {
	if len(held) != len(want) {
		return false
	}
	for _, g := range want {
		if h, ok := held[g.Key]; !ok || h != g.Hold {
			return false
		}
	}
	return true
}
