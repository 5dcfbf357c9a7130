package upload

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRC32CCombine(t *testing.T) {
	data := randomBytes(3<<20+17, 31)
	want := crc32.Checksum(data, castagnoli)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		// Split into random pieces and fold them back together.
		var crc uint32
		for rest := data; len(rest) > 0; {
			n := min(len(rest), r.IntN(1<<20)+1)
			if r.IntN(10) == 0 {
				n = 0 // empty pieces are allowed
			}
			crc = crc32cCombine(crc, crc32.Checksum(rest[:n], castagnoli), int64(n))
			rest = rest[n:]
		}
		if crc != want {
			t.Fatalf("combined %08x, want %08x", crc, want)
		}
	}
	if got := crc32cCombine(0, crc32.Checksum([]byte("123456789"), castagnoli), 9); got != 0xE3069283 {
		t.Fatalf("empty prefix: %08x", got)
	}
}
