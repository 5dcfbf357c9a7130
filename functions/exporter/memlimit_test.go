package main

import "testing"

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name               string
		lambdaMiB, goLimit string
		partSize           int64
		concurrency        int
		want               int64
	}{
		{"the deployed exporter", "1769", "", 8 * mib, 4, (1769 - 5*8 - 32) * mib},
		{"default concurrency", "1769", "", 8 * mib, 0, (1769 - 5*8 - 32) * mib},
		{"a small function keeps half", "128", "", 16 * mib, 8, 64 * mib},
		{"GOMEMLIMIT wins", "1769", "900MiB", 8 * mib, 4, 0},
		{"not in Lambda", "", "", 8 * mib, 4, 0},
		{"unreadable size", "lots", "", 8 * mib, 4, 0},
	} {
		if got := memoryLimit(c.lambdaMiB, c.goLimit, c.partSize, c.concurrency); got != c.want {
			t.Errorf("%s: %d MiB, want %d MiB", c.name, got/mib, c.want/mib)
		}
	}
}

func TestPartSize(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		maxFile, partSize, want int64
	}{
		{0, 0, 8 * mib},                 // the default 256 MiB files
		{256 * mib, 0, 8 * mib},         // 32 parts
		{1 << 30, 0, 32 * mib},          // larger files, larger parts
		{300 * mib, 0, 10 * mib},        // a whole number of MiB
		{64 * mib, 0, 5 * mib},          // S3's minimum
		{256 * mib, 16 * mib, 16 * mib}, // configured
	} {
		if got := (ExportConfig{MaxFileBytes: c.maxFile, PartSize: c.partSize}).partSize(); got != c.want {
			t.Errorf("MaxFileBytes %d MiB, PartSize %d MiB: part size %.2f MiB, want %d MiB", c.maxFile/mib, c.partSize/mib, float64(got)/mib, c.want/mib)
		}
	}
}
