package chaos

import (
	"bytes"
	"mime/multipart"
	"net"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestClassifyStores(t *testing.T) {
	const pp = "daybook/acct_x/v1/events/dt=2026-03-05/"
	for _, tc := range []struct {
		store, method, target string
		step                  Step
		key                   string
		write, create         bool
	}{
		{StoreGCS, "GET", "/storage/v1/b/bk/o/" + pp + "_SUCCESS?alt=media", StepBegin, pp + "_SUCCESS", false, false},
		{StoreGCS, "DELETE", "/storage/v1/b/bk/o/" + pp + "_SUCCESS", StepBegin, pp + "_SUCCESS", false, false},
		{StoreGCS, "POST", "/upload/storage/v1/b/bk/o?uploadType=multipart&name=" + pp + "_SUCCESS", StepSuccess, pp + "_SUCCESS", true, false},
		{StoreGCS, "POST", "/upload/storage/v1/b/bk/o?uploadType=resumable&name=" + pp + "part-00000.parquet", StepData, pp + "part-00000.parquet", true, true},
		{StoreGCS, "PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&name=" + pp + "part-00000.parquet&upload_id=u1", StepData, pp + "part-00000.parquet", true, false},
		{StoreGCS, "POST", "/upload/storage/v1/b/bk/o?uploadType=multipart&name=" + pp + "_manifest.json", StepManifest, pp + "_manifest.json", true, false},
		{StoreGCS, "POST", "/upload/storage/v1/b/bk/o?uploadType=multipart&ifGenerationMatch=0&name=daybook/acct_x/v1/events/metadata/v2.metadata.json", StepIceberg, "daybook/acct_x/v1/events/metadata/v2.metadata.json", true, false},
		{StoreGCS, "GET", "/storage/v1/b/bk/o?prefix=" + pp, StepStale, pp, false, false},
		{StoreGCS, "POST", "/upload/storage/v1/b/bk/o?uploadType=multipart&name=daybook/acct_x/v1/_manifests/dt=2026-03-05/manifest.json", StepDelivery, "daybook/acct_x/v1/_manifests/dt=2026-03-05/manifest.json", true, false},
		{StoreAzure, "PUT", "/devstoreaccount1/bk/" + pp + "part-00000.parquet?comp=block&blockid=YQ%3D%3D", StepData, pp + "part-00000.parquet", true, false},
		{StoreAzure, "PUT", "/devstoreaccount1/bk/" + pp + "part-00000.parquet?comp=blocklist", StepData, pp + "part-00000.parquet", true, false},
		{StoreAzure, "PUT", "/devstoreaccount1/bk/" + pp + "_SUCCESS", StepSuccess, pp + "_SUCCESS", true, false},
		{StoreAzure, "HEAD", "/devstoreaccount1/bk/" + pp + "_SUCCESS", StepBegin, pp + "_SUCCESS", false, false},
		{StoreAzure, "PUT", "/devstoreaccount1/bk/" + pp + "_load/duckdb.sql", StepManifest, pp + "_load/duckdb.sql", true, false},
		{StoreAzure, "GET", "/devstoreaccount1/bk/daybook/acct_x/v1/events/metadata/version-hint.text", StepIceberg, "daybook/acct_x/v1/events/metadata/version-hint.text", false, false},
		{StoreAzure, "GET", "/devstoreaccount1/bk?restype=container&comp=list&prefix=" + pp, StepStale, pp, false, false},
		{StoreAzure, "GET", "/devstoreaccount1/bk?restype=container", StepOther, "", false, false},
	} {
		p := &Proxy{Store: tc.store}
		r := p.classify(httptest.NewRequest(tc.method, tc.target, nil))
		if r.store != tc.store || r.step != tc.step || r.key != tc.key || r.write != tc.write || r.create != tc.create {
			t.Errorf("%s %s %s: %+v, want step %s key %q write %v create %v", tc.store, tc.method, tc.target, r, tc.step, tc.key, tc.write, tc.create)
		}
	}
	a := classifyGCS(httptest.NewRequest("PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&name=k&upload_id=1", nil))
	b := classifyGCS(httptest.NewRequest("PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&name=k&upload_id=2", nil))
	c := classifyAzure(httptest.NewRequest("PUT", "/a/bk/k?comp=block&blockid=MQ%3D%3D", nil))
	d := classifyAzure(httptest.NewRequest("PUT", "/a/bk/k?comp=block&blockid=Mg%3D%3D", nil))
	if a.id != b.id || c.id != d.id {
		t.Errorf("an identity depends on a per-upload id: %q %q, %q %q", a.id, b.id, c.id, d.id)
	}
}

// TestKillAt: an owed kill is made at the first write of its store's step,
// stays owed while it finds no process, and is never drawn for a read.
func TestKillAt(t *testing.T) {
	f := NewFaults(1, Rates{}, 0)
	f.KillAt(StoreGCS, StepData)
	read := request{store: StoreGCS, step: StepData, id: "GET k"}
	write := request{store: StoreGCS, step: StepData, id: "PUT k", write: true}
	other := request{store: StoreAzure, step: StepData, id: "PUT k", write: true}
	if k := f.decide(read); k != KindNone {
		t.Fatalf("a read drew %q", k)
	}
	if k := f.decide(other); k != KindNone {
		t.Fatalf("another store's write drew %q", k)
	}
	k := f.decide(write)
	if k != KindKillBefore && k != KindKillAfter {
		t.Fatalf("the owed write drew %q", k)
	}
	f.done(k, write, false)
	if got := f.Owed(); len(got) != 1 || f.Kills() != 0 {
		t.Fatalf("a kill that found no process: owed %v, kills %d", got, f.Kills())
	}
	k = f.decide(write)
	if k != KindKillBefore && k != KindKillAfter {
		t.Fatalf("the kill still owed drew %q", k)
	}
	f.done(k, write, true)
	if got := f.Owed(); len(got) != 0 || f.Kills() != 1 {
		t.Fatalf("after the kill: owed %v, kills %d", got, f.Kills())
	}
	if k := f.decide(write); k != KindNone {
		t.Fatalf("a paid kill drew %q again", k)
	}
	if n := f.Stores()[StoreGCS].Faults[KindReset][StepData]; n != 1 {
		t.Errorf("the kill that found no process counted %d resets, want 1", n)
	}
}

// TestSocketInode: the inode found for a connection's client end is the
// socket a client holds open (what sender matches a bootstrap's fds to),
// not the server's end.
func TestSocketInode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	inode := socketInode(server.RemoteAddr(), server.LocalAddr())
	if inode == "" {
		t.Fatal("no inode for the client end")
	}
	if back := socketInode(server.LocalAddr(), server.RemoteAddr()); back == inode || back == "" {
		t.Fatalf("the server end's inode %q, the client's %q", back, inode)
	}
	fd, err := client.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	link, err := os.Readlink(filepath.Join("/proc/self/fd", strconv.Itoa(int(fd.Fd()))))
	if err != nil {
		t.Fatal(err)
	}
	if link != "socket:["+inode+"]" {
		t.Fatalf("the client's socket is %s, socketInode found %s", link, inode)
	}
}

func TestObjectBody(t *testing.T) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	pw, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json"}})
	pw.Write([]byte(`{"name":"k"}`))
	pw, _ = mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json"}})
	pw.Write([]byte(`{"generation":7}`))
	mw.Close()
	r := httptest.NewRequest("POST", "/upload/storage/v1/b/bk/o?uploadType=multipart&name=k", nil)
	r.Header.Set("Content-Type", "multipart/related; boundary="+mw.Boundary())
	if got := string(objectBody(r, buf.Bytes())); got != `{"generation":7}` {
		t.Errorf("multipart upload: %q", got)
	}
	r = httptest.NewRequest("PUT", "/a/bk/k", nil)
	if got := string(objectBody(r, []byte("x"))); got != "x" {
		t.Errorf("one-part upload: %q", got)
	}
}
