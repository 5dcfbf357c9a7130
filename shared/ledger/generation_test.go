package ledger

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestGenerationAfter: the claim, or one above a _SUCCESS up to
// MaxBucketLead ahead; further ahead (up to the largest int64, whatever
// the claim) is ErrBucketAhead naming the marker, never an overflow.
func TestGenerationAfter(t *testing.T) {
	for _, tc := range []struct {
		claimed, found, want int64 // want 0: ErrBucketAhead
	}{
		{4, 0, 4},
		{4, 3, 4},
		{4, -7, 4},
		{4, 4, 5},
		{4, 4 + MaxBucketLead, 5 + MaxBucketLead},
		{4, 5 + MaxBucketLead, 0},
		{4, math.MaxInt64 - 1, 0},
		{4, math.MaxInt64, 0},
		{math.MinInt64, math.MaxInt64, 0},
	} {
		got, err := GenerationAfter(tc.claimed, tc.found, "s3://b/p/_SUCCESS")
		if tc.want == 0 {
			if !errors.Is(err, ErrBucketAhead) || !strings.Contains(err.Error(), "s3://b/p/_SUCCESS") || got != 0 {
				t.Errorf("GenerationAfter(%d, %d) = %d, %v; want ErrBucketAhead naming the marker", tc.claimed, tc.found, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("GenerationAfter(%d, %d) = %d, %v; want %d", tc.claimed, tc.found, got, err, tc.want)
		}
	}
}
