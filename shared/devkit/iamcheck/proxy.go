package iamcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// DefaultKey is the access key id of the test credentials every local
// function and test client signs with (motoserver.ConfigFor, the local
// functions' AWS_ACCESS_KEY_ID).
const DefaultKey = "testing"

// Route is one function's way to AWS through a Proxy.
type Route struct {
	// Function is the function's logical id in the template
	// (ExporterFunction, SweeperFunction, ConsoleFunction).
	Function string
	// Upstream is where calls go on (moto's base URL); Services overrides
	// it for a signing service ("dynamodb": a serializing proxy, "s3": a
	// fault proxy).
	Upstream string
	Services map[string]string
	// Key is the access key id of the function's own credentials (default
	// DefaultKey). A call signed with any other key uses credentials the
	// function obtained, an assumed customer role's: the customer's
	// policies decide those, not the template's, so they pass unchecked.
	Key string
	// Names says what the test's resources stand for.
	Names Names
	// Report receives one message per call the policy denies (or that
	// iamcheck cannot classify), naming the function, the action, the
	// resource and the statements that came closest: a test's t.Errorf.
	Report func(msg string)
	// Allowed, when set, receives each allowed check of the function's
	// own credentials with the statements that allowed it: a test shows
	// which statement its calls reach.
	Allowed func(action string, statements []string)
}

// Proxy is a reverse proxy on loopback that checks every call of one
// function against its role's statements before it goes on. A denied
// call is answered as AWS answers it (AccessDenied in the service's
// protocol), so the code under test sees what a deployment would, and is
// reported.
type Proxy struct {
	route    Route
	policies *Policies
	sts      []Statement
	srv      *http.Server
	ln       net.Listener
	rp       *httputil.ReverseProxy
}

// Start checks r against policies and listens on a free loopback port.
func Start(policies *Policies, r Route) (*Proxy, error) {
	sts, err := policies.Statements(r.Function)
	if err != nil {
		return nil, err
	}
	if r.Key == "" {
		r.Key = DefaultKey
	}
	targets := map[string]*url.URL{}
	for svc, u := range r.Services {
		if targets[svc], err = url.Parse(u); err != nil {
			return nil, fmt.Errorf("iamcheck: upstream of %s: %w", svc, err)
		}
	}
	def, err := url.Parse(r.Upstream)
	if err != nil || def.Host == "" {
		return nil, fmt.Errorf("iamcheck: upstream %q: want a base URL", r.Upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("iamcheck: %w", err)
	}
	p := &Proxy{route: r, policies: policies, sts: sts, ln: ln}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := def
			if s, err := SignerOf(Call{Method: pr.In.Method, URL: pr.In.URL, Header: pr.In.Header}); err == nil && targets[s.Service] != nil {
				t = targets[s.Service]
			}
			pr.SetURL(t)
			pr.Out.Host = pr.In.Host // what the call was signed for
		},
		Transport:     &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 30 * time.Second},
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL: the function's AWS endpoint.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := Call{Method: r.Method, URL: r.URL, Header: r.Header, Body: body}
	if denied := p.check(c); denied != nil {
		p.route.Report(denied.report)
		writeDenied(w, denied)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// denial is a call IAM would refuse.
type denial struct {
	service, action, resource, role string
	report                          string
}

// check evaluates c; nil means it goes on.
func (p *Proxy) check(c Call) *denial {
	return check(p.policies, p.sts, p.route, c)
}

// check evaluates c, made by r.Function with r.Key, against sts (its
// role's statements in p) and tallies it; nil means it is allowed.
func check(p *Policies, sts []Statement, r Route, c Call) *denial {
	fn, role := r.Function, p.Role(r.Function)
	s, err := SignerOf(c)
	if err != nil {
		return &denial{report: fmt.Sprintf("iamcheck: %s: %v", fn, err)}
	}
	if s.AccessKey != r.Key {
		tally.session(fn)
		return nil
	}
	// The run's tally is of the template's policies: a call checked
	// against policies with a statement taken out (Without) is not.
	add := tally.add
	if p.removed != "" {
		add = func(string, string, Check, Decision, []Statement) {}
	}
	auth, err := p.Authorize(c, s, r.Names)
	if err != nil {
		add(fn, role, Check{Request: Request{Action: "(not understood)"}, Prefix: err.Error()}, Decision{}, nil)
		return &denial{service: s.Service, report: fmt.Sprintf("iamcheck: %s (role %s): %s %s: %v", fn, role, c.Method, c.URL.Path, err)}
	}
	for _, ch := range auth.Checks {
		d, err := Evaluate(sts, ch.Request)
		if err != nil {
			return &denial{service: s.Service, action: ch.Action, resource: ch.Resource, role: role,
				report: fmt.Sprintf("iamcheck: %s (role %s): %s: %v", fn, role, auth.Operation, err)}
		}
		add(fn, role, ch, d, sts)
		if d.Allowed {
			if r.Allowed != nil {
				r.Allowed(ch.Action, d.Allowing)
			}
			continue
		}
		why := "no statement of the template names " + ch.Action + " on this resource"
		switch {
		case d.Denying != "":
			why = "statement " + d.Denying + " denies it"
		case len(d.Near) > 0:
			why = "no statement allows it; the statements for this action and resource: " + strings.Join(d.Near, "; ")
		}
		return &denial{service: s.Service, action: ch.Action, resource: ch.Resource, role: role,
			report: fmt.Sprintf("iamcheck: function %s (role %s) is denied %s (%s): %s", fn, role, ch.Request, auth.Operation, why)}
	}
	return nil
}

// writeDenied answers a denied call with AWS's AccessDenied in the
// service's protocol.
func writeDenied(w http.ResponseWriter, d *denial) {
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s (iamcheck: the template's policy does not allow it)", d.role, d.action, d.resource)
	switch d.service {
	case "s3":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>%s</Message></Error>`, xmlEscape(msg))
	case "sts":
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>%s</Message></Error><RequestId>iamcheck</RequestId></ErrorResponse>`, xmlEscape(msg))
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
		w.Header().Set("X-Amzn-Query-Error", "AccessDenied;Sender")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]string{"__type": "AccessDeniedException", "message": msg})
		_, _ = w.Write(b)
	}
}

var xmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace
