package ledger

// The stopped half of the fleet index. A failed row that stopped retrying
// (Stopped, due key 9#) also carries fleet_shard=X#<nn> and
// fleet_key=<account>#<dataset>#<day>, nn = Shard(account); Requeue and
// ClaimManual, the only ways out of that state, remove them (ClaimManual's
// stale mark, summary.go, replaces them). The sweeper
// reads the level of stopped partitions of the whole fleet from the
// FleetShards shards, whatever the number of accounts.

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/daybook-dev/daybook/shared/partition"
)

// markStopped adds the fleet-index attributes of a stopped row to upd.
func markStopped(upd expression.UpdateBuilder, k partition.Key) expression.UpdateBuilder {
	return upd.Set(name(AttrFleetShard), val(stoppedShard(Shard(k.AccountID)))).Set(name(AttrFleetKey), val(stoppedKey(k)))
}

// unmarkStopped removes them (harmless on a row that has none).
func unmarkStopped(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(name(AttrFleetShard)).Remove(name(AttrFleetKey))
}

// StoppedByAccount counts the stopped partitions of shard's accounts (failed
// after MaxAttempts, waiting for a requeue), by account. It reads the
// stopped rows' index entries only (keys), which are few: each is an alarm.
func (l Schedule) StoppedByAccount(ctx context.Context, shard int) (map[string]int, ReadStats, error) {
	out := map[string]int{}
	kc := expression.Key(AttrFleetShard).Equal(val(stoppedShard(shard)))
	stats, err := l.queryPages(ctx, "stopped partitions of "+stoppedShard(shard), IndexFleet, kc, "", 0,
		func(page *dynamodb.QueryOutput) error {
			for _, it := range page.Items {
				acct, _, _ := strings.Cut(avString(it[AttrFleetKey]), "#")
				out[acct]++
			}
			return nil
		})
	return out, stats, err
}
