package iamcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Calls of functions a test cannot put a proxy in front of: a moto_server
// that another process started (`daybook-dev local up`, `make
// local-up`) serves functions whose endpoint the test does not choose.
// moto records every request it serves when asked (its recorder,
// /moto-api/recorder/, MOTO_ENABLE_RECORDING): the headers, the method, the
// URL and the body. A local function names itself in its User-Agent
// (AWS_SDK_UA_APP_ID=<logical id>, which the local stack sets; the SDK
// adds app/<id>), so its recorded calls are checked after the fact as the
// proxy checks them as they happen; the operator CLI's are not a
// function's.

// recorded is one entry of moto's recording.
type recorded struct {
	Headers     map[string]string `json:"headers"`
	Method      string            `json:"method"`
	URL         string            `json:"url"`
	Body        string            `json:"body"`
	BodyEncoded bool              `json:"body_encoded"`
}

var appID = regexp.MustCompile(`(?:^| )app/([A-Za-z0-9_-]+)`)

// CheckRecording downloads the recording of the moto_server at motoURL and
// checks every call a function of p made (by its User-Agent's app id)
// against its statements, as Proxy does; report receives one message per
// denied call. It returns the number of calls checked.
func CheckRecording(ctx context.Context, p *Policies, motoURL string, names Names, report func(string)) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(motoURL, "/")+"/moto-api/recorder/download-recording", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("iamcheck: moto's recording: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("iamcheck: moto's recording: HTTP %d: %s", resp.StatusCode, b)
	}
	return checkRecorded(resp.Body, p, names, report)
}

func checkRecorded(r io.Reader, p *Policies, names Names, report func(string)) (int, error) {
	sts := map[string][]Statement{}
	for _, fn := range p.Functions() {
		sts[fn], _ = p.Statements(fn)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	n := 0
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e recorded
		if err := json.Unmarshal(line, &e); err != nil {
			return n, fmt.Errorf("iamcheck: moto's recording: %w", err)
		}
		h := http.Header{}
		for k, v := range e.Headers {
			h.Set(k, v)
		}
		m := appID.FindStringSubmatch(h.Get("User-Agent"))
		if m == nil || sts[m[1]] == nil {
			continue // not a function's call
		}
		u, err := url.Parse(e.URL)
		if err != nil {
			return n, fmt.Errorf("iamcheck: recorded URL %q: %w", e.URL, err)
		}
		body := []byte(e.Body)
		if e.BodyEncoded {
			if body, err = base64.StdEncoding.DecodeString(e.Body); err != nil {
				return n, fmt.Errorf("iamcheck: recorded body of %s %s: %w", e.Method, e.URL, err)
			}
		}
		n++
		if d := check(p, sts[m[1]], Route{Function: m[1], Key: DefaultKey, Names: names}, Call{Method: e.Method, URL: u, Header: h, Body: body}); d != nil {
			report(d.report)
		}
	}
	return n, sc.Err()
}
