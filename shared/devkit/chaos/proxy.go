package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"time"
)

// Proxy is a reverse proxy on 127.0.0.1 in front of a store's emulator:
// between one exporter and S3 (the exporter's AWS_ENDPOINT_URL_S3 points
// at it), or between every exporter and a GCS or Azure emulator (the
// accounts' destination endpoint points at it). It forwards every request,
// injects the fault Faults decides, kills the exporter that sent the
// request, and records each _SUCCESS the store accepted.
type Proxy struct {
	Target string // the store's base URL
	// Store is the store's API (StoreS3, StoreGCS, StoreAzure): how a
	// request is read and a fault answered. "" is S3.
	Store  string
	Faults *Faults
	// Kill SIGKILLs the exporter behind this proxy and reports whether a
	// process was killed.
	Kill func() bool
	// Sender, when set, finds the exporter at the other end of a
	// connection (a proxy several exporters share) and returns its Kill,
	// nil for a connection of no exporter's; Kill is then unused.
	Sender func(net.Conn) func() bool

	srv    *http.Server
	ln     net.Listener
	client *http.Client
}

type killKey struct{}

// Listen takes a free loopback port, so that URL is known before Start
// (fake-gcs-server is started with its proxy's URL).
func (p *Proxy) Listen() error {
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("chaos proxy: %w", err)
	}
	p.ln = ln
	return nil
}

// Start listens on a free loopback port.
func (p *Proxy) Start() error {
	if err := p.Listen(); err != nil {
		return err
	}
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}, Timeout: 2 * time.Minute}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	if p.Sender != nil {
		// Once per connection, while its client is surely alive: the
		// connection belongs to one process for its whole life.
		p.srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, killKey{}, p.Sender(c))
		}
	}
	go func() { _ = p.srv.Serve(p.ln) }()
	return nil
}

// kill SIGKILLs the exporter that sent r.
func (p *Proxy) kill(r *http.Request) bool {
	if p.Sender == nil {
		return p.Kill()
	}
	k, _ := r.Context().Value(killKey{}).(func() bool)
	return k != nil && k()
}

func (p *Proxy) classify(r *http.Request) request {
	switch p.Store {
	case StoreGCS:
		return classifyGCS(r)
	case StoreAzure:
		return classifyAzure(r)
	}
	return classify(r)
}

// fail answers an injected server error in the store's own form: S3's and
// Azure's XML error (Azure's code in x-ms-error-code too), GCS's JSON one.
func (p *Proxy) fail(w http.ResponseWriter, kind Kind) {
	status := http.StatusServiceUnavailable
	if kind == Kind500 {
		status = http.StatusInternalServerError
	}
	switch p.Store {
	case StoreGCS:
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"injected by the chaos proxy","errors":[{"reason":"backendError","message":"injected by the chaos proxy"}]}}`, status)
		return
	case StoreAzure:
		code := "InternalError"
		if status != http.StatusInternalServerError {
			code = "ServerBusy"
		}
		w.Header().Set("x-ms-error-code", code)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>injected by the chaos proxy</Message></Error>`, code)
		return
	}
	code := "InternalError"
	if status != http.StatusInternalServerError {
		code = "SlowDown"
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the chaos proxy</Message></Error>`, code)
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := p.classify(r)
	kind := p.Faults.decide(req)
	// The whole body first: a fault never leaves half a request in flight.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	switch kind {
	case Kind500, Kind503, KindOutage:
		p.Faults.done(kind, req, false)
		p.fail(w, kind)
		return
	case KindReset:
		p.Faults.done(kind, req, false)
		hangUp(w)
		return
	case KindKillBefore:
		p.Faults.done(kind, req, p.kill(r))
		hangUp(w)
		return
	}
	resp, err := p.forward(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if req.step == StepSuccess && resp.status/100 == 2 {
		var s struct {
			Generation int64  `json:"generation"`
			RunID      string `json:"run_id"`
		}
		if json.Unmarshal(objectBody(r, body), &s) == nil {
			p.Faults.commit(Commit{Partition: strings.TrimSuffix(req.key, "_SUCCESS"), Generation: s.Generation, RunID: s.RunID})
		}
	}
	switch kind {
	case KindDrop:
		p.Faults.done(kind, req, false)
		hangUp(w)
		return
	case KindKillAfter:
		p.Faults.done(kind, req, p.kill(r))
		hangUp(w)
		return
	}
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// objectBody is the object's bytes in a request that writes it whole: the
// body, or the media part of a GCS multipart upload (metadata, then media).
func objectBody(r *http.Request, body []byte) []byte {
	if r.URL.Query().Get("uploadType") != "multipart" {
		return body
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var last []byte
	for {
		part, err := mr.NextPart()
		if err != nil {
			return last
		}
		if last, err = io.ReadAll(part); err != nil {
			return nil
		}
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (p *Proxy) forward(r *http.Request, body []byte) (*response, error) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.Target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Expect") // the body is already here
	out.Host = r.Host
	out.ContentLength = int64(len(body))
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// hangUp closes the client's connection without an answer, with a TCP
// reset where it can.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
