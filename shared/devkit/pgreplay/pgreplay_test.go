package pgreplay

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/daybook-dev/daybook/shared/devkit/pgserver"
)

func TestReleased(t *testing.T) {
	chunks := []Chunk{{After: 0}, {After: 10}, {After: 10}, {After: 25}}
	for _, tc := range []struct {
		next int
		sent int64
		want int
	}{
		{0, 0, 1},   // the server speaks first: released before the client sends
		{1, 9, 1},   // one byte short of the next tag
		{1, 10, 3},  // equal tags go together
		{1, 24, 3},  // the last waits for its 25
		{1, 100, 4}, // a client ahead gets everything up to the end
		{3, 25, 4},
		{4, 1000, 4}, // nothing left
	} {
		if got := released(chunks, tc.next, tc.sent); got != tc.want {
			t.Errorf("released(next %d, sent %d) = %d, want %d", tc.next, tc.sent, got, tc.want)
		}
	}
}

func TestConnAddCoalesces(t *testing.T) {
	var c Conn
	c.add(0, []byte("ab"))
	c.add(0, []byte("c"))
	c.add(7, []byte("d"))
	c.add(7, make([]byte, chunkMax)) // no room left in the chunk with "d"
	if len(c.Chunks) != 3 || string(c.Chunks[0].Data) != "abc" || string(c.Chunks[1].Data) != "d" || c.Chunks[2].After != 7 {
		t.Fatalf("chunks %d, first %q", len(c.Chunks), c.Chunks[0].Data)
	}
	if c.ServerBytes() != 4+chunkMax {
		t.Fatalf("server bytes %d", c.ServerBytes())
	}
}

// session is what the tests record and replay: a query and a binary COPY.
type session struct {
	sum  int64
	copy []byte
}

func runSession(ctx context.Context, dsn string) (session, error) {
	var s session
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return s, err
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, `SELECT sum(n) FROM t WHERE n > $1 /* a comment long enough that a shorter query cannot reach its byte count */`, 3).Scan(&s.sum); err != nil {
		return s, err
	}
	var buf bytes.Buffer
	if _, err := conn.PgConn().CopyTo(ctx, &buf, `COPY (SELECT n, md5(n::text) FROM t ORDER BY n) TO STDOUT (FORMAT binary)`); err != nil {
		return s, err
	}
	s.copy = buf.Bytes()
	return s, nil
}

// record records one session against a fresh server with a table t.
func record(t *testing.T) (*Recording, session) {
	srv := pgserver.New(t)
	ctx := context.Background()
	setup, err := pgx.Connect(ctx, srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, `CREATE TABLE t AS SELECT generate_series(1, 20000) AS n`); err != nil {
		t.Fatal(err)
	}
	setup.Close(ctx)
	rec, err := StartRecorder(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	want, err := runSession(ctx, rec.DSN)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rec.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Conns) != 1 || r.Conns[0].ServerBytes() <= int64(len(want.copy)) || r.Conns[0].ClientBytes == 0 {
		t.Fatalf("recorded %d connections: %+v", len(r.Conns), r.Conns)
	}
	if want.sum != 20000*20001/2-6 || len(want.copy) < 20000*32 {
		t.Fatalf("recorded session: sum %d, copy %d bytes", want.sum, len(want.copy))
	}
	return r, want
}

func TestReplay(t *testing.T) {
	rec, want := record(t)
	for i := range 2 {
		rp := NewReplayer(t, rec)
		got, err := runSession(context.Background(), rp.DSN)
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if got.sum != want.sum || !bytes.Equal(got.copy, want.copy) {
			t.Fatalf("replay %d: sum %d and %d copy bytes, recorded %d and %d", i, got.sum, len(got.copy), want.sum, len(want.copy))
		}
		if err := rp.Close(); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if n := rp.Connections(); n != 1 {
			t.Fatalf("replay %d: %d connections", i, n)
		}
	}

	t.Run("a client that sends less waits, and the replay says why", func(t *testing.T) {
		rp, err := StartReplayer(rec)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		cfg, err := pgx.ParseConfig(rp.DSN)
		if err != nil {
			t.Fatal(err)
		}
		socket := make(chan net.Conn, 1)
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				select {
				case socket <- c: // the session's; pgx dials again for a cancel request
				default:
				}
			}
			return c, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg) // the start-up is the recording's
		if err != nil {
			t.Fatal(err)
		}
		qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		var n int
		err = conn.QueryRow(qctx, `SELECT 1`).Scan(&n)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a query the recording has no answer for: %v, want the client's deadline", err)
		}
		// pgx now closes the connection in the background: it sends a
		// cancel request (a connection the recording does not have) and
		// waits up to 15 s for the server to hang up. Hang up from the
		// client's side.
		(<-socket).Close()
		<-conn.PgConn().CleanupDone()
		err = rp.Close()
		t.Logf("the replay reports: %v", err)
		if err == nil || !strings.Contains(err.Error(), "connection 0: client sent") || !strings.Contains(err.Error(), "stopped (closed); chunk 1") {
			t.Fatalf("replay of a different session: %v", err)
		}
	})

	t.Run("the replay does not look at the bytes, only counts them", func(t *testing.T) {
		for _, extra := range []int64{0, 10} {
			rp, err := StartReplayer(rec)
			if err != nil {
				t.Fatal(err)
			}
			c, err := net.Dial("unix", filepath.Join(rp.dir, ".s.PGSQL.5432"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(make([]byte, rec.Conns[0].ClientBytes+extra)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(io.LimitReader(c, rec.Conns[0].ServerBytes()))
			if err != nil || int64(len(got)) != rec.Conns[0].ServerBytes() {
				t.Fatalf("read %d of %d server bytes: %v", len(got), rec.Conns[0].ServerBytes(), err)
			}
			c.Close()
			err = rp.Close()
			if extra == 0 && err != nil {
				t.Fatalf("a client sending the recorded byte count: %v", err)
			}
			if extra > 0 && (err == nil || !strings.Contains(err.Error(), "bytes in all, the recorded one")) {
				t.Fatalf("a client sending %d bytes more: %v", extra, err)
			}
		}
	})

	t.Run("more connections than recorded", func(t *testing.T) {
		rp, err := StartReplayer(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runSession(context.Background(), rp.DSN); err != nil {
			t.Fatal(err)
		}
		if _, err := pgx.Connect(context.Background(), rp.DSN); err == nil {
			t.Fatal("a second connection to a one-connection recording connected")
		}
		if err := rp.Close(); err == nil || !strings.Contains(err.Error(), "connection 1: the recording has 1 connections") {
			t.Fatalf("replay with a connection too many: %v", err)
		}
	})
}

func TestWithHost(t *testing.T) {
	got, err := withHost("host=/tmp/x port=5432 user=postgres dbname=postgres sslmode=disable", "/tmp/y")
	if want := "host=/tmp/y port=5432 user=postgres dbname=postgres sslmode=disable"; err != nil || got != want {
		t.Fatalf("withHost = %q, %v; want %q", got, err, want)
	}
	if _, err := withHost("postgres://u@h/db", "/tmp/y"); err == nil {
		t.Fatal("a URL DSN was accepted")
	}
}
