package ledgertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// SerialProxy is SerialDB as a reverse proxy on loopback: in front of
// moto, it serializes the writes to one item, as DynamoDB does and moto
// does not, and runs each transaction alone (ServeHTTP says why), for
// every client that reaches moto through it, in this process or another
// (a bootstrap whose AWS_ENDPOINT_URL_DYNAMODB points at it, a function
// built by a test's wiring). Calls to other services pass through. It
// injects no fault.
type SerialProxy struct {
	Target string
	// KeyAttrs are the tables' key attribute names (ledger.AttrPK,
	// ledger.AttrSK).
	KeyAttrs []string

	srv    *http.Server
	ln     net.Listener
	client *http.Client
	locks  sync.Map     // item key -> *sync.Mutex
	tx     sync.RWMutex // held by a transaction, shared by every other request
}

// Start listens on a free loopback port.
func (d *SerialProxy) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("dynamodb serializing proxy: %w", err)
	}
	d.ln = ln
	d.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	return nil
}

// URL is the proxy's base URL.
func (d *SerialProxy) URL() string { return "http://" + d.ln.Addr().String() }

// Close stops the proxy.
func (d *SerialProxy) Close() error { return d.srv.Close() }

func (d *SerialProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	// moto backs a transaction up by copying its tables and, when it is
	// cancelled, puts the copies back, undoing every write to those tables
	// made meanwhile (and copies them while other requests change them):
	// a transaction runs alone.
	if op == "TransactWriteItems" {
		d.tx.Lock()
		defer d.tx.Unlock()
	} else {
		d.tx.RLock()
		defer d.tx.RUnlock()
	}
	for _, k := range itemKeys(op, body, d.KeyAttrs) {
		m, _ := d.locks.LoadOrStore(k, &sync.Mutex{})
		m.(*sync.Mutex).Lock()
		defer m.(*sync.Mutex).Unlock()
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, d.Target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	resp, err := d.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// itemKeys names the items a write request writes or checks, sorted and
// without repeats, so that a transaction locks all of its items in key
// order (two transactions cannot deadlock) and a single write its one.
// Reads and unparsable bodies lock nothing.
func itemKeys(op string, body []byte, keyAttrs []string) []string {
	type write struct {
		TableName string
		Key, Item map[string]map[string]any
	}
	key := func(w *write) string {
		item := w.Key
		if item == nil {
			item = w.Item
		}
		parts := []any{w.TableName}
		for _, a := range keyAttrs {
			parts = append(parts, "|", item[a]["S"])
		}
		return fmt.Sprint(parts...)
	}
	var keys []string
	switch op {
	case "UpdateItem", "PutItem", "DeleteItem":
		var in write
		if json.Unmarshal(body, &in) == nil {
			keys = append(keys, key(&in))
		}
	case "TransactWriteItems":
		var in struct {
			TransactItems []struct{ Put, Update, Delete, ConditionCheck *write }
		}
		if json.Unmarshal(body, &in) != nil {
			return nil
		}
		for _, it := range in.TransactItems {
			for _, w := range []*write{it.Put, it.Update, it.Delete, it.ConditionCheck} {
				if w != nil {
					keys = append(keys, key(w))
				}
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}
