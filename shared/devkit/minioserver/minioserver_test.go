package minioserver

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestBinMissing: a minio that is not there is an error with the install
// hint, never a skip.
func TestBinMissing(t *testing.T) {
	t.Setenv("MINIO_SERVER", t.TempDir()+"/minio")
	if _, err := Bin(); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("Bin with MINIO_SERVER missing = %v, want the install hint", err)
	}
}

// TestEnvStaysOffline: the server's whole environment turns off everything
// that would reach the network and inherits nothing.
func TestEnvStaysOffline(t *testing.T) {
	env := Env("/d")
	for _, want := range []string{"MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off", "MINIO_BROWSER=off", "HOME=/d"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "MINIO_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TMPDIR=") {
			t.Errorf("Env passes %s", kv)
		}
	}
}

// TestStartStop: the server answers on a loopback port once Start returns,
// and Stop ends its process.
func TestStartStop(t *testing.T) {
	s, err := Start(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Errorf("URL %s is not on loopback", s.URL)
	}
	resp, err := http.Get(s.URL + "/minio/health/cluster")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("health after Start: %s", resp.Status)
	}
	pid := s.Pid
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after Stop: kill 0 = %v, want no such process", pid, err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop = %v", err)
	}
}
