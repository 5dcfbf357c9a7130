package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Proxy is a reverse proxy on 127.0.0.1 between one exporter and the S3
// emulator (the exporter's AWS_ENDPOINT_URL_S3 points at it). It forwards
// every request, injects the fault Faults decides, kills its exporter
// through Kill, and records each _SUCCESS the store accepted.
type Proxy struct {
	Target string // the store's base URL
	Faults *Faults
	// Kill SIGKILLs the exporter behind this proxy and reports whether a
	// process was killed.
	Kill func() bool

	srv    *http.Server
	ln     net.Listener
	client *http.Client
}

// Start listens on a free loopback port.
func (p *Proxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("chaos proxy: %w", err)
	}
	p.ln = ln
	p.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second}, Timeout: 2 * time.Minute}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return nil
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := classify(r)
	kind := p.Faults.decide(req)
	// The whole body first: a fault never leaves half a request in flight.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	switch kind {
	case Kind500, Kind503, KindOutage:
		p.Faults.done(kind, req.step, false)
		code, status := "InternalError", http.StatusInternalServerError
		if kind != Kind500 {
			code, status = "SlowDown", http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the chaos proxy</Message></Error>`, code)
		return
	case KindReset:
		p.Faults.done(kind, req.step, false)
		hangUp(w)
		return
	case KindKillBefore:
		p.Faults.done(kind, req.step, p.Kill())
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
		if json.Unmarshal(body, &s) == nil {
			p.Faults.commit(Commit{Partition: strings.TrimSuffix(req.key, "_SUCCESS"), Generation: s.Generation, RunID: s.RunID})
		}
	}
	switch kind {
	case KindDrop:
		p.Faults.done(kind, req.step, false)
		hangUp(w)
		return
	case KindKillAfter:
		p.Faults.done(kind, req.step, p.Kill())
		hangUp(w)
		return
	}
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
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
