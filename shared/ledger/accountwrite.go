package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/daybook-dev/daybook/shared/account"
)

// Every write of an account goes through saveAccount: one DynamoDB
// transaction holding the account record (conditional on the version it was
// read at, or on there being none), the account's isolation guards
// (account.Guards: one item per prefix segment, one per role and external
// id, one for the tenant key's identity, each conditional on nobody else
// holding it in a conflicting way) and an event in the account's history.
// Of two writes that would nest two accounts' prefixes, give them one role
// and external id, or one tenant ("7" and "0007" alike), at most one
// commits, however they interleave; of two writes of one
// account read at one version, one commits and the other is ErrChanged, so
// a write never reverts a change it did not see.

var (
	// ErrExists: CreateAccount of an id that is stored.
	ErrExists = errors.New("ledger: account already exists")
	// ErrChanged: the account was changed or deleted since it was read.
	ErrChanged = errors.New("ledger: account changed since it was read")
	// ErrIsolation: the account would share storage or credentials with
	// another; the error joins an *account.FieldError per conflict.
	ErrIsolation = errors.New("ledger: account overlaps another account")
	// ErrContended: the write kept conflicting with concurrent transactions.
	ErrContended = errors.New("ledger: account write conflicted with concurrent writes; try again")
)

// Account event actions.
const (
	ActionCreated  = "create"
	ActionUpdated  = "update"
	ActionEnabled  = "enable"
	ActionDisabled = "disable"
	ActionDeleted  = "delete"
)

// AccountEvent is one change of an account, as its history records it.
type AccountEvent struct {
	Version int64            `json:"version"`
	At      time.Time        `json:"at"`
	By      string           `json:"by"`
	Action  string           `json:"action"`
	Changes []account.Change `json:"changes,omitempty"`
}

// CreateAccount stores a new account (validated as PutAccount describes)
// with its guards, at version 1, and records who created it (by). An id
// that is stored is ErrExists; a conflict with another account is
// ErrIsolation. It returns the account as stored.
func (l Accounts) CreateAccount(ctx context.Context, a account.Account, by string) (account.Account, error) {
	return l.saveAccount(ctx, nil, a, by, false)
}

// UpdateAccount replaces a stored account with a, conditional on the
// stored version being a.Version (the version a was read at; ErrChanged
// otherwise), moves its guards to the new destination (ErrIsolation on a
// conflict), and records who changed what (by, account.Diff) in the
// account's history. A missing account is ErrNotFound. It returns the
// account as stored, at its new version.
func (l Accounts) UpdateAccount(ctx context.Context, a account.Account, by string) (account.Account, error) {
	old, held, err := l.readAccount(ctx, a.ID)
	if err != nil {
		return a, err
	}
	if old.Version != a.Version {
		return a, fmt.Errorf("%w: account %s is at version %d, read at %d", ErrChanged, a.ID, old.Version, a.Version)
	}
	return l.saveAccount(ctx, &storedAccount{old, held}, a, by, false)
}

// PutAccount validates a (account.ValidateShape, and its start date at the
// ledger's clock and backfill limit, Config.MaxBackfillDays: checkStart) and
// stores it (pk=ACCOUNTS, sk=<id>) with its isolation guards. CreatedAt is
// set from the clock when zero. An enabled account is woken now in the
// fleet index (its datasets or start date may have changed, so the next
// sweep reads its watermarks again); a disabled one leaves the index.
//
// With a.Version set (a was read from the ledger) it is UpdateAccount's
// conditional write; without, it creates the account or replaces the
// stored version it reads, for seeding and tests that own the account.
// Commands use CreateAccount and UpdateAccount, which say who.
func (l Accounts) PutAccount(ctx context.Context, a account.Account) error {
	if a.Version != 0 {
		_, err := l.UpdateAccount(ctx, a, "")
		return err
	}
	old, held, err := l.readAccount(ctx, a.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		_, err = l.CreateAccount(ctx, a, "")
	case err == nil:
		a.Version = old.Version
		_, err = l.saveAccount(ctx, &storedAccount{old, held}, a, "", false)
	}
	return err
}

// DeleteAccount removes the account record and its guards (its ledger rows
// and history stay; see PurgeAccount), recording the deletion in its
// history. A missing account is ErrNotFound.
func (l Accounts) DeleteAccount(ctx context.Context, id string) error {
	old, held, err := l.readAccount(ctx, id)
	if err != nil {
		return err
	}
	_, err = l.saveAccount(ctx, &storedAccount{old, held}, old, "", true)
	return err
}

// AccountHistory returns the account's recorded changes, oldest first
// (kept after DeleteAccount, removed by PurgeAccount).
func (l Accounts) AccountHistory(ctx context.Context, id string) ([]AccountEvent, error) {
	var out []AccountEvent
	_, err := l.queryPages(ctx, "account history", "", expression.Key(AttrPK).Equal(val(pkEventPrefix+id)), "", 0,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				rec, err := decodeItem[eventRecord](it)
				if err != nil {
					return err
				}
				at, err := parseTime(rec.At)
				if err != nil {
					return malformed(it, attrAt, "(a time)", err)
				}
				ev := AccountEvent{Version: rec.Version, At: at, By: rec.By, Action: rec.Action}
				if rec.Changes != "" {
					if err := json.Unmarshal([]byte(rec.Changes), &ev.Changes); err != nil {
						return malformed(it, attrChanges, "(JSON of []account.Change)", err)
					}
				}
				out = append(out, ev)
			}
			return nil
		})
	return out, err
}

// storedAccount is an account as read, with the guards its record says it
// holds.
type storedAccount struct {
	acct account.Account
	held map[string]account.Hold
}

// readAccount reads one account with its version and held guards.
func (l *kernel) readAccount(ctx context.Context, id string) (account.Account, map[string]account.Hold, error) {
	item, err := l.getItem(ctx, tableKey(pkAccounts, id))
	if errors.Is(err, ErrNotFound) {
		return account.Account{}, nil, fmt.Errorf("%w: account %s", ErrNotFound, id)
	}
	if err != nil {
		return account.Account{}, nil, err
	}
	a, err := accountFromItem(item)
	if err != nil {
		return a, nil, err
	}
	rec, _ := decodeItem[accountRecord](item) // decoded by accountFromItem
	held := map[string]account.Hold{}
	for _, g := range rec.Guards {
		hold, key, ok := strings.Cut(g, ":")
		if !ok {
			return a, nil, malformed(item, attrGuards, "(<hold>:<key>)", fmt.Errorf("%q", g))
		}
		held[key] = account.Hold(hold)
	}
	return a, held, nil
}

// saveAccount writes a over old (nil: a is new), or deletes old.
func (l *kernel) saveAccount(ctx context.Context, old *storedAccount, a account.Account, by string, deleting bool) (account.Account, error) {
	now := l.now()
	var guards []account.Guard
	if !deleting {
		if err := a.ValidateShape(l.cfg.Catalog); err != nil {
			return a, fmt.Errorf("account %s: %w", a.ID, errors.Join(err, a.ValidateStart(now, l.cfg.MaxBackfillDays)))
		}
		if err := l.checkStart(ctx, a, now); err != nil {
			return a, fmt.Errorf("account %s: %w", a.ID, err)
		}
		if a.CreatedAt.IsZero() {
			a.CreatedAt = now
		}
		var err error
		if guards, err = a.Guards(l.cfg.Stage); err != nil {
			return a, fmt.Errorf("account %s: %w", a.ID, err)
		}
	}
	var held map[string]account.Hold
	ev := AccountEvent{Version: a.Version + 1, At: now, By: by, Action: ActionCreated}
	if old != nil {
		held = old.held
		ev.Action, ev.Changes = action(old.acct, a, deleting)
	}
	acctItem, err := l.accountItem(old, a, guards, deleting)
	if err != nil {
		return a, err
	}
	evItem, err := l.eventItem(a.ID, ev)
	if err != nil {
		return a, err
	}
	gops, opGuards, err := l.guardOps(a.ID, held, guards)
	if err != nil {
		return a, err
	}
	items := append([]types.TransactWriteItem{acctItem, evItem}, gops...)
	items = append(items, types.TransactWriteItem{Put: l.staleMark(a.ID)}) // its fleet summary changes too (summary.go)
	for attempt := 1; ; attempt++ {
		_, err = l.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			break
		}
		codes := make([]string, len(tce.CancellationReasons))
		for i, r := range tce.CancellationReasons {
			codes[i] = aws.ToString(r.Code)
		}
		if slices.Contains(codes, "ConditionalCheckFailed") || attempt == 3 {
			return a, l.cancelled(ctx, a, old == nil, codes, opGuards)
		}
		// Only conflicts with concurrent transactions: the conditions held,
		// so the same write may commit now.
	}
	if err != nil {
		return a, fmt.Errorf("ledger: write account %s: %w", a.ID, err)
	}
	a.Version = ev.Version
	return a, nil
}

// action names an update and lists its changes.
func action(old, a account.Account, deleting bool) (string, []account.Change) {
	if deleting {
		return ActionDeleted, nil
	}
	changes := account.Diff(old, a)
	if len(changes) == 1 && old.Enabled != a.Enabled {
		if a.Enabled {
			return ActionEnabled, changes
		}
		return ActionDisabled, changes
	}
	return ActionUpdated, changes
}

// accountItem writes the account record: created (none stored), or
// updated or deleted at old's version.
func (l *kernel) accountItem(old *storedAccount, a account.Account, guards []account.Guard, deleting bool) (types.TransactWriteItem, error) {
	key := tableKey(pkAccounts, a.ID)
	var cond expression.ConditionBuilder
	switch {
	case old == nil:
		cond = expression.AttributeNotExists(name(AttrPK))
	case old.acct.Version == 0: // stored before versions
		cond = expression.AttributeExists(name(AttrPK)).And(expression.AttributeNotExists(name(attrVersion)))
	default:
		cond = name(attrVersion).Equal(val(old.acct.Version))
	}
	if deleting {
		expr, err := expression.NewBuilder().WithCondition(cond).Build()
		if err != nil {
			return types.TransactWriteItem{}, fmt.Errorf("ledger: build expression: %w", err)
		}
		return types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(l.cfg.Table), Key: key, ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		}}, nil
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("account %s: %w", a.ID, err)
	}
	heldList := make([]string, len(guards))
	for i, g := range guards {
		heldList[i] = string(g.Hold) + ":" + g.Key
	}
	nowS := fmtTime(l.now())
	upd := expression.Set(name(attrAccountID), val(a.ID)).
		Set(name(attrEnabled), val(a.Enabled)).
		Set(name(attrDoc), val(string(doc))).
		Set(name(attrUpdatedAt), val(nowS)).
		Set(name(attrVersion), val(a.Version+1)).
		Set(name(attrGuards), val(heldList)).
		Add(name(attrWakeSeq), val(1)).
		Remove(name(attrClosedThrough))
	if a.Enabled {
		upd = upd.Set(name(AttrFleetShard), val(wakeShard(Shard(a.ID)))).Set(name(AttrFleetKey), val(nowS))
	} else {
		upd = upd.Remove(name(AttrFleetShard)).Remove(name(AttrFleetKey))
	}
	return l.updateItem(key, upd, cond)
}

func (l *kernel) eventItem(id string, ev AccountEvent) (types.TransactWriteItem, error) {
	changes := ""
	if len(ev.Changes) > 0 {
		b, err := json.Marshal(ev.Changes)
		if err != nil {
			return types.TransactWriteItem{}, err
		}
		changes = string(b)
	}
	item := map[string]types.AttributeValue{
		AttrPK:        s(pkEventPrefix + id),
		AttrSK:        s(fmt.Sprintf("%s#%012d", fmtTime(ev.At), ev.Version)),
		attrAccountID: s(id),
		attrVersion:   &types.AttributeValueMemberN{Value: fmt.Sprint(ev.Version)},
		attrAt:        s(fmtTime(ev.At)),
		attrBy:        s(ev.By),
		attrAction:    s(ev.Action),
	}
	if changes != "" {
		item[attrChanges] = s(changes)
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(l.cfg.Table), Item: item}}, nil
}

// guardOps moves account id's guards from held to want: one write per guard
// whose hold changes, each conditional on the hold being allowed (see
// account.Guards). opGuards[i] is the guard of the transaction's item i+2
// (after the account record and its event); a released guard's is its
// zero Guard with the key.
func (l *kernel) guardOps(id string, held map[string]account.Hold, want []account.Guard) (ops []types.TransactWriteItem, opGuards []account.Guard, err error) {
	wanted := map[string]account.Guard{}
	for _, g := range want {
		wanted[g.Key] = g
	}
	keys := make([]string, 0, len(held)+len(want))
	for k := range held {
		keys = append(keys, k)
	}
	for k := range wanted {
		if _, ok := held[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	me := val(id)
	meSet := val(types.AttributeValueMemberSS{Value: []string{id}})
	owner, under := name(attrOwner), name(attrUnder)
	for _, k := range keys {
		from, g := held[k], wanted[k]
		to := g.Hold
		if from == to {
			continue
		}
		var upd expression.UpdateBuilder
		var cond expression.ConditionBuilder
		switch {
		case to == account.GuardOwn && from == account.GuardUnder:
			// Only this account is below it, so it may become its owner.
			upd = expression.Set(owner, me).Set(name(attrWhat), val(g.Desc)).Delete(under, meSet)
			cond = expression.AttributeNotExists(owner).And(under.Size().Equal(val(1)))
		case to == account.GuardOwn:
			upd = expression.Set(owner, me).Set(name(attrWhat), val(g.Desc))
			cond = expression.AttributeNotExists(owner).And(expression.AttributeNotExists(under))
		case to == account.GuardUnder && from == account.GuardOwn:
			upd = expression.Add(under, meSet).Remove(owner)
			cond = owner.Equal(me)
		case to == account.GuardUnder:
			upd = expression.Add(under, meSet).Set(name(attrWhat), val(g.Desc))
			cond = expression.AttributeNotExists(owner)
		// A released guard keeps no description: it names the account's
		// prefix, and a purged account leaves no item naming it (the next
		// holder writes its own).
		case from == account.GuardOwn:
			upd = expression.Remove(owner).Remove(name(attrWhat))
			cond = owner.Equal(me)
		default: // released from under
			upd = expression.Delete(under, meSet).Remove(name(attrWhat))
		}
		op, err := l.updateItem(tableKey(pkGuards, k), upd, cond)
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, op)
		if g.Key == "" {
			g.Key = k
		}
		opGuards = append(opGuards, g)
	}
	return ops, opGuards, nil
}

// cancelled explains a cancelled transaction: the account record's
// condition (ErrExists, ErrChanged) or the guards', each named as the
// *account.FieldError of the conflict, with the account holding the guard.
func (l *kernel) cancelled(ctx context.Context, a account.Account, creating bool, codes []string, opGuards []account.Guard) error {
	if len(codes) > 0 && codes[0] == "ConditionalCheckFailed" {
		if creating {
			return fmt.Errorf("%w: %s", ErrExists, a.ID)
		}
		return fmt.Errorf("%w: account %s", ErrChanged, a.ID)
	}
	var conflicts []error
	for i, g := range opGuards {
		if i+2 >= len(codes) || codes[i+2] != "ConditionalCheckFailed" {
			continue
		}
		conflicts = append(conflicts, l.guardConflict(ctx, a.ID, g))
	}
	if len(conflicts) == 0 {
		return fmt.Errorf("%w (account %s: %s)", ErrContended, a.ID, strings.Join(codes, ", "))
	}
	return fmt.Errorf("%w: %w", ErrIsolation, errors.Join(conflicts...))
}

// guardConflict names who holds the guard g that account id could not take.
func (l *kernel) guardConflict(ctx context.Context, id string, g account.Guard) error {
	fe := &account.FieldError{Field: g.Field, Value: g.Value}
	item, err := l.getItem(ctx, tableKey(pkGuards, g.Key))
	var rec guardRecord
	if err == nil {
		rec, err = decodeItem[guardRecord](item)
	}
	others := slices.DeleteFunc(rec.Under, func(u string) bool { return u == id })
	switch {
	case err != nil && !errors.Is(err, ErrNotFound):
		fe.Reason = fmt.Sprintf("conflicts with another account on %s (which one cannot be read: %v)", g.Desc, err)
	case rec.Owner != "" && rec.Owner != id && strings.HasPrefix(g.Key, "r#"):
		fe.Reason = fmt.Sprintf("account %s already uses %s; each account needs its own", rec.Owner, g.Desc)
	case rec.Owner != "" && rec.Owner != id && strings.HasPrefix(g.Key, account.GuardTenant):
		fe.Reason = fmt.Sprintf("is account %s's %s: both accounts would export the same tenant's rows", rec.Owner, g.Desc)
	case rec.Owner != "" && rec.Owner != id && g.Hold == account.GuardOwn:
		fe.Reason = fmt.Sprintf("is account %s's %s", rec.Owner, g.Desc)
	case rec.Owner != "" && rec.Owner != id:
		fe.Reason = fmt.Sprintf("is inside account %s's %s", rec.Owner, g.Desc)
	case len(others) > 0:
		fe.Reason = fmt.Sprintf("contains account %s's prefix: %s holds accounts below it", others[0], g.Desc)
	default:
		fe.Reason = fmt.Sprintf("conflicted with a concurrent change of %s; run the command again", g.Desc)
	}
	return fe
}
