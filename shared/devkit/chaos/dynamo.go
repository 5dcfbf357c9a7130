package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/daybook-dev/daybook/shared/ledger"
)

// serialDynamo is a reverse proxy to moto's DynamoDB that serializes the
// writes to one item, as DynamoDB does and moto does not (see
// ledgertest.SerialDB, the same guarantee in-process). It injects no fault.
type serialDynamo struct {
	Target string

	srv    *http.Server
	ln     net.Listener
	client *http.Client
	locks  sync.Map // item key -> *sync.Mutex
}

func (d *serialDynamo) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("chaos dynamodb proxy: %w", err)
	}
	d.ln = ln
	d.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute}
	d.srv = &http.Server{Handler: d, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = d.srv.Serve(ln) }()
	return nil
}

func (d *serialDynamo) URL() string  { return "http://" + d.ln.Addr().String() }
func (d *serialDynamo) Close() error { return d.srv.Close() }

func (d *serialDynamo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	if op := target[strings.LastIndexByte(target, '.')+1:]; op == "UpdateItem" || op == "PutItem" || op == "DeleteItem" {
		var in struct {
			TableName string
			Key, Item map[string]map[string]any
		}
		if json.Unmarshal(body, &in) == nil {
			item := in.Key
			if item == nil {
				item = in.Item
			}
			k := fmt.Sprint(in.TableName, "|", item[ledger.AttrPK]["S"], "|", item[ledger.AttrSK]["S"])
			m, _ := d.locks.LoadOrStore(k, &sync.Mutex{})
			m.(*sync.Mutex).Lock()
			defer m.(*sync.Mutex).Unlock()
		}
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
