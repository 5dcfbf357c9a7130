package serverproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The test binary is its own server: run as `serve PORT`, it prints a line
// and answers HTTP on 127.0.0.1:PORT (200 at /ready, 404 elsewhere) until
// it is stopped.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		fmt.Println("serving on", os.Args[2])
		mux := http.NewServeMux()
		mux.HandleFunc("/ready", func(http.ResponseWriter, *http.Request) {})
		err := http.ListenAndServe(net.JoinHostPort("127.0.0.1", os.Args[2]), mux)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func serve(port int) []string { return []string{"serve", strconv.Itoa(port)} }

// TestStartStop: Start returns once the readiness check passes, on a
// loopback port, its output in Dir/Name.log; Stop ends the process and a
// second Stop does nothing.
func TestStartStop(t *testing.T) {
	dir := t.TempDir()
	p, err := Start(t.Context(), Spec{Name: "helper", Path: self(t), Args: serve, Dir: dir, Ready: OKAt("/ready")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://127.0.0.1:" + strconv.Itoa(p.Port); p.URL != want {
		t.Errorf("URL = %s, want %s", p.URL, want)
	}
	if err := OKAt("/ready")(t.Context(), p.URL); err != nil {
		t.Errorf("after Start: %v", err)
	}
	if err := OKAt("/other")(t.Context(), p.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("OKAt a 404 = %v, want the status", err)
	}
	if err := Listening(t.Context(), p.URL); err != nil {
		t.Errorf("Listening after Start: %v", err)
	}
	pid := p.Pid
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after Stop: kill 0 = %v, want no such process", pid, err)
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop = %v", err)
	}
	if p.Log != dir+"/helper.log" || !strings.Contains(p.LogTail(), "serving on "+strconv.Itoa(p.Port)) {
		t.Errorf("log %s holds %q, want the server's output", p.Log, p.LogTail())
	}
}

// TestOutput: a Spec's Output takes the server's output instead of a log
// file, and Log names the log file when set.
func TestOutput(t *testing.T) {
	var out bytes.Buffer
	p, err := Start(t.Context(), Spec{Name: "helper", Path: self(t), Args: serve, Output: &out, Ready: Listening})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Log != "" || p.LogTail() != "" || !strings.Contains(out.String(), "serving on") {
		t.Errorf("Output: log %q, writer got %q", p.Log, out.String())
	}
	log := t.TempDir() + "/named.log"
	p, err = Start(t.Context(), Spec{Name: "helper", Path: self(t), Args: serve, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if p.Log != log {
		t.Errorf("Log = %s, want %s", p.Log, log)
	}
}

// TestExitedBeforeReady: a server that exits before it is ready ends the
// wait at once with ErrExited and the end of its log.
func TestExitedBeforeReady(t *testing.T) {
	_, err := Start(t.Context(), Spec{Name: "quitter", Path: "/bin/sh", Dir: t.TempDir(),
		Args: func(int) []string { return []string{"-c", "echo no such thing; exit 3"} }})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "no such thing") || !strings.Contains(err.Error(), "quitter") {
		t.Fatalf("Start of a server that exits = %v, want ErrExited naming it, with its log", err)
	}
}
