package ledger

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// serialDB works around a moto gap: moto evaluates a ConditionExpression and
// applies the write without holding a per-item lock, so two concurrent
// conditional writes to one item can both succeed there — DynamoDB
// serializes writes to an item, and L2 rests on that. serialDB restores the
// guarantee in tests by serializing writes per key (the condition is still
// evaluated by moto). All ledgers of a test process share it.
type serialDB struct {
	*dynamodb.Client
	locks sync.Map // pk|sk -> *sync.Mutex
}

func (s *serialDB) lock(key map[string]types.AttributeValue) func() {
	k := avString(key[AttrPK]) + "|" + avString(key[AttrSK])
	m, _ := s.locks.LoadOrStore(k, &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	return m.(*sync.Mutex).Unlock
}

func (s *serialDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	defer s.lock(in.Key)()
	return s.Client.UpdateItem(ctx, in, opts...)
}

func (s *serialDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	defer s.lock(in.Item)()
	return s.Client.PutItem(ctx, in, opts...)
}

var _ DynamoAPI = (*serialDB)(nil)
