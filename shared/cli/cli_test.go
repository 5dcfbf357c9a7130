package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionString(t *testing.T) {
	tests := []struct {
		name  string
		stamp string
		bi    *debug.BuildInfo
		ok    bool
		want  string
	}{
		{"stamped by the build", "v0.9.0-12-g7c8a4b5", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "v0.9.0-12-g7c8a4b5"},
		{"no build info", "", nil, false, "(unknown: built without module information)"},
		{"release", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "7c8a4b5e0f1d2c3b4a5968778695a4b3c2d1e0f9"}, {Key: "vcs.time", Value: "2026-11-30T20:00:00Z"}, {Key: "vcs.modified", Value: "false"},
		}}, true, "v1.4.0 (revision 7c8a4b5e0f1d, 2026-11-30T20:00:00Z)"},
		{"dirty tree", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "7c8a4b5e0f1d2c3b"}, {Key: "vcs.modified", Value: "true"},
		}}, true, "(devel) (revision 7c8a4b5e0f1d+dirty)"},
		{"no vcs", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(devel) (no VCS revision recorded)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VersionString(tt.stamp, func() (*debug.BuildInfo, bool) { return tt.bi, tt.ok }); got != tt.want {
				t.Errorf("VersionString = %q, want %q", got, tt.want)
			}
		})
	}
}
