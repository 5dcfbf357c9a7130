package encode

import (
	"math/big"

	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/devkit/datasettest"
)

type bigIntT = big.Int

var bigOne = big.NewInt(1)

type eventGen struct{ g *datasettest.EventGen }

func newEventGen(seed uint64) eventGen {
	return eventGen{datasettest.NewEventGen(seed, civil.FromEpochDays(20785), 1_000_000)}
}

// next returns a fresh copy so callers may keep or mutate it.
func (e eventGen) next() []any { return append([]any(nil), e.g.Next()...) }
