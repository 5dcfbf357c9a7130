package layout_test

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/layout"
	"github.com/daybook-dev/daybook/shared/loadsql"
)

// TestEngineNamesFit: the key length check assumes load script engine names
// of at most MaxEngineNameLen bytes; a longer engine would make keys the
// check never saw.
func TestEngineNamesFit(t *testing.T) {
	t.Parallel()
	if len(loadsql.Engines) == 0 {
		t.Fatal("no engines")
	}
	for _, e := range loadsql.Engines {
		if len(e) > layout.MaxEngineNameLen {
			t.Errorf("engine %q is %d bytes; layout.MaxEngineNameLen is %d", e, len(e), layout.MaxEngineNameLen)
		}
	}
}
