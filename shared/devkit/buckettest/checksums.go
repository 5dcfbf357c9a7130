package buckettest

import (
	"testing"

	"github.com/daybook-dev/daybook/shared/bucket"
)

// testChecksumVerified sends a wrong checksum, straight to the store, at
// each place a Writer sends one (Inspector.WrongChecksums). A store that
// verifies checksums refuses each and stores nothing; one that does not
// (moto) stores what it was sent, which is why the suite recomputes
// checksums itself (checkResult).
func testChecksumVerified(t *testing.T, nb func(*testing.T) Backend) {
	data := randomBytes(int(minPart)+10, 31)
	probe := newHarness(t, nb, bucket.Options{})
	for _, wc := range probe.be.Inspect.WrongChecksums() {
		t.Run(wc.Name, func(t *testing.T) {
			h := newHarness(t, nb, bucket.Options{})
			const key = "wrong-checksum"
			err := wrongChecksum(h, wc.Name).Send(h.ctx, key, data)
			if h.differs(h.be.ChecksumsUnverified) || h.differs(wc.Unverified) {
				if err != nil {
					t.Fatalf("a store that does not verify checksums refused: %v", err)
				}
				equalBytes(t, key, h.stored(key).Data, data)
				return
			}
			if err == nil {
				t.Fatal("a wrong checksum was accepted")
			}
			t.Logf("refused: %v", err)
			h.absent(key)
		})
	}
}

// wrongChecksum is h's store's request named name.
func wrongChecksum(h *harness, name string) WrongChecksum {
	for _, wc := range h.be.Inspect.WrongChecksums() {
		if wc.Name == name {
			return wc
		}
	}
	h.t.Fatalf("no request %s", name)
	return WrongChecksum{}
}
