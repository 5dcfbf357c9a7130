// Package ledgertest holds test support for code that runs the ledger on
// moto.
package ledgertest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// SerialDB works around a moto gap: moto evaluates a ConditionExpression and
// applies the write without holding a per-item lock, so two concurrent
// conditional writes to one item can both succeed there. DynamoDB serializes
// writes to an item, and the ledger's claims (L2) rest on that. SerialDB
// restores the guarantee in tests by serializing writes per item key; moto
// still evaluates every condition. Share one SerialDB between all ledgers of
// a test process.
//
// A second gap: moto applies a transaction to a copy of its tables and, when
// the transaction is cancelled, puts the copy back, undoing every write made
// to the table in the meantime. So a transaction runs alone: single writes
// share tx, a transaction holds it exclusively.
type SerialDB struct {
	*dynamodb.Client
	// KeyAttrs are the table's key attribute names (ledger.AttrPK, ledger.AttrSK).
	KeyAttrs []string
	locks    sync.Map // key -> *sync.Mutex
	tx       sync.RWMutex
}

func (s *SerialDB) lock(item map[string]types.AttributeValue) func() {
	m, _ := s.locks.LoadOrStore(s.keyString(item), &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	return m.(*sync.Mutex).Unlock
}

func (s *SerialDB) keyString(item map[string]types.AttributeValue) string {
	parts := make([]string, len(s.KeyAttrs))
	for i, a := range s.KeyAttrs {
		if v, ok := item[a].(*types.AttributeValueMemberS); ok {
			parts[i] = v.Value
		}
	}
	return strings.Join(parts, "|")
}

// UpdateItem is the client's, serialized per item.
func (s *SerialDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.tx.RLock()
	defer s.tx.RUnlock()
	defer s.lock(in.Key)()
	return s.Client.UpdateItem(ctx, in, opts...)
}

// PutItem is the client's, serialized per item.
func (s *SerialDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.tx.RLock()
	defer s.tx.RUnlock()
	defer s.lock(in.Item)()
	return s.Client.PutItem(ctx, in, opts...)
}

// TransactWriteItems is the client's, run alone (see SerialDB) and
// serialized with every write to any of its items (locked in key order).
func (s *SerialDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.tx.Lock()
	defer s.tx.Unlock()
	keys := map[string]map[string]types.AttributeValue{}
	for _, it := range in.TransactItems {
		var key map[string]types.AttributeValue
		switch {
		case it.Put != nil:
			key = it.Put.Item
		case it.Update != nil:
			key = it.Update.Key
		case it.Delete != nil:
			key = it.Delete.Key
		case it.ConditionCheck != nil:
			key = it.ConditionCheck.Key
		}
		keys[s.keyString(key)] = key
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		defer s.lock(keys[k])()
	}
	return s.Client.TransactWriteItems(ctx, in, opts...)
}
