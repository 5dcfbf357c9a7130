// Package minioserver starts and stops a MinIO server on 127.0.0.1 for
// integration tests: a real S3 implementation, which verifies the checksums
// a request carries where moto accepts them unchecked. Like motoserver it
// owns nothing else: buckets are created by the test.
//
// The server is a single drive in a directory of the caller's, with static
// root credentials and every outbound feature off (update check, call home,
// the web console), so it never reaches the network.
package minioserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/daybook-dev/daybook/shared/awsclient"
)

// InstallHint is part of the error whenever the minio binary cannot be found.
const InstallHint = "minio not found: run `make tools` (it installs the MinIO server version pinned in the Makefile with go install into $(go env GOPATH)/bin), or set MINIO_SERVER to a minio binary"

// Region is the region the server says it is in.
const Region = "us-east-1"

// The root credentials of every server started here (test values).
const (
	AccessKey = "daybook-minio"
	SecretKey = "daybook-minio-secret"
)

// Server is one running MinIO server.
type Server struct {
	URL string
	Pid int
	// Log is the file the server's output goes to.
	Log     string
	exited  chan struct{} // closed once the process has exited
	waitErr error         // its exit, once exited is closed
}

// Bin returns the minio executable: $MINIO_SERVER, $GOBIN or $GOPATH/bin
// (where `make tools` installs it), then PATH.
func Bin() (string, error) {
	if p := os.Getenv("MINIO_SERVER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MINIO_SERVER=%s: %w; %s", p, err, InstallHint)
		}
		return p, nil
	}
	for _, dir := range goBinDirs() {
		p := filepath.Join(dir, "minio")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", errors.New(InstallHint)
}

// goBinDirs are where go install puts binaries: $GOBIN, else the first
// $GOPATH entry's bin (~/go/bin when GOPATH is unset).
func goBinDirs() []string {
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	gopath := filepath.SplitList(os.Getenv("GOPATH"))
	if len(gopath) > 0 && gopath[0] != "" {
		dirs = append(dirs, filepath.Join(gopath[0], "bin"))
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	return dirs
}

// Env is the server's whole environment: credentials, region, and every
// feature that would reach the network turned off. Nothing is inherited.
func Env(dir string) []string {
	return []string{
		"MINIO_ROOT_USER=" + AccessKey,
		"MINIO_ROOT_PASSWORD=" + SecretKey,
		"MINIO_REGION=" + Region,
		"MINIO_UPDATE=off",          // no update check against dl.min.io at start
		"MINIO_CALLHOME_ENABLE=off", // no diagnostics sent to SUBNET (off by default too)
		"MINIO_BROWSER=off",         // no embedded console listener
		"HOME=" + dir,
		"TMPDIR=" + dir,
	}
}

// Start launches MinIO on a free loopback port with its data, config and
// log under dir (the caller's temporary directory), and returns once its
// cluster health endpoint says it serves requests.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("minio data dir: %w", err)
	}
	logPath := filepath.Join(dir, "minio.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("minio log: %w", err)
	}
	defer logf.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(bin, "server", "--address", addr, "--certs-dir", filepath.Join(dir, "certs"), data)
	cmd.Env = Env(dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{URL: "http://" + addr, Pid: cmd.Process.Pid, Log: logPath, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	if err := waitReady(ctx, s, 60*time.Second); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("minio on %s (log %s): %w\n%s", s.URL, logPath, err, LogTail(logPath))
	}
	return s, nil
}

// Stop ends the server's process group and waits for it to exit.
func (s *Server) Stop() error {
	if s == nil || s.Pid == 0 {
		return nil
	}
	err := StopPid(s.Pid)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.Pid = 0
	return err
}

// StopPid ends a server started earlier by its pid, which is also its
// process group id.
func StopPid(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop minio pid %d: %w", pid, err)
	}
	return nil
}

// Config returns an SDK configuration pointed at the server with its root
// credentials, as a user would set through AWS_ENDPOINT_URL.
func (s *Server) Config(ctx context.Context) (aws.Config, error) {
	cfg, err := awsclient.Load(ctx)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.Region = Region
	cfg.Credentials = credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")
	cfg.BaseEndpoint = aws.String(s.URL)
	return cfg, nil
}

// LogTail is the last 4000 bytes of the log at path ("" when unreadable).
func LogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b[max(0, len(b)-4000):])
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls the cluster health endpoint, which answers 200 once the
// object layer is up (the liveness one answers before); a server that
// exits meanwhile ends the wait at once.
func waitReady(ctx context.Context, s *Server, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/minio/health/cluster", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before it was ready: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s (health: %s)", limit, last)
		case <-tick.C:
		}
	}
}
