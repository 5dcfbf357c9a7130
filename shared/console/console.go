// Package console is daybook's web console: the fleet, an account's
// datasets by day, a partition's history and manifests, and the operator
// actions (re-export, retry, enable and disable an account), each behind
// a confirmation page. It is an http.Handler built from narrow interfaces
// (the ledger, the jobs queue, the accounts' buckets), so `daybook console`
// serves it on this machine and the console Lambda behind a function URL
// (FunctionURLHandler).
//
// Pages are html/template with embedded assets and no build step; they
// read without JavaScript (the script only adds arrow keys in the heatmap).
// Every state change is a POST from a confirmation page, checked for
// cross-site requests (csrf.go).
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/daybook-dev/daybook/shared/dataset"

	"github.com/daybook-dev/daybook/shared/account"
	"github.com/daybook-dev/daybook/shared/civil"
	"github.com/daybook-dev/daybook/shared/ledger"
	"github.com/daybook-dev/daybook/shared/ops"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Ledger is what the console reads and changes in the ledger;
// ops.Ledger has it. A read-only console never calls Requeue (a retry),
// UpdateAccount, the ReexportNoter's methods or FleetSummary (which may
// store a summary; it calls FleetSummaryReadOnly).
type Ledger interface {
	ops.Reader
	ops.FleetIndex
	ops.Requeuer
	ops.ReexportNoter
	UpdateAccount(ctx context.Context, a account.Account, by string) (account.Account, error)
}

var _ Ledger = ops.Ledger{}

// ObjectReader reads whole objects of one bucket, at most limit bytes of
// each (bucket.ErrTooLarge beyond); *bucket.Bucket has it. A
// missing object is an error that errors.Is bucket.ErrNotFound.
type ObjectReader interface {
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
}

// Buckets opens an account's bucket for reading, the way `daybook verify`
// does (the account's role or daybook's own, and the expected bucket
// owner).
type Buckets interface {
	Reader(acct account.Account) (ObjectReader, error)
}

// BucketsFunc is a function as Buckets.
type BucketsFunc func(acct account.Account) (ObjectReader, error)

// Reader calls f.
func (f BucketsFunc) Reader(acct account.Account) (ObjectReader, error) { return f(acct) }

// Config is what a console needs. Ledger, Buckets and Now are required.
type Config struct {
	// Catalog is the deployment's dataset catalog.
	Catalog *dataset.Set
	Ledger  Ledger
	Buckets Buckets
	// FleetPageSize is the accounts on a page of the fleet (default
	// ops.DefaultFleetLimit).
	FleetPageSize int
	// Queue and QueueURL send re-export requests; without them the console
	// offers no re-export.
	Queue    ops.SendAPI
	QueueURL string
	// QueueNote, when set, says after a re-export or retry what runs the
	// queued work: a local stack has no event source or scheduler.
	QueueNote string
	// Stage renders account prefixes ({{.Stage}}); SettleDelay is the
	// deployment's default.
	Stage       string
	SettleDelay time.Duration
	// Deployment names what the console reads, for the page header.
	Deployment string
	// ReadOnly leaves out every action: no buttons, and the action routes
	// answer 403. A read-only console writes nothing to the ledger: an
	// account found by id that has no fleet summary yet is shown from its
	// rows, its summary not stored (its deployed role may only read).
	ReadOnly bool
	// Identity names who asks, recorded with every action (requested_by);
	// an action without one is refused.
	Identity func(*http.Request) string
	// Secure: the console is served over HTTPS (a function URL). Its cookie
	// is then Secure with the __Host- prefix, and the origin it accepts is
	// https.
	Secure bool
	// Hosts, if any, are the Host headers the console answers (a local
	// console: its listen address), so a page from another site that
	// rebinds its name to this address cannot read it.
	Hosts []string
	// BucketTimeout bounds the reads of a partition's manifests (default
	// 10s): an unreachable bucket is said on the page, not waited for.
	BucketTimeout time.Duration
	Now           func() time.Time
	// Rand makes the cross-site request tokens (default crypto/rand).
	Rand io.Reader
	// Log hears every action, with who asked (default: discarded).
	Log *slog.Logger
}

// Server is the console, an http.Handler.
type Server struct {
	cfg   Config
	pages *pages
	mux   *http.ServeMux
}

// New checks cfg and returns the console.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Catalog == nil:
		return nil, errors.New("console: no dataset catalog")
	case cfg.Ledger == nil:
		return nil, errors.New("console: no ledger")
	case cfg.Buckets == nil:
		return nil, errors.New("console: no buckets")
	case cfg.Now == nil:
		return nil, errors.New("console: no clock")
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Identity == nil {
		cfg.Identity = func(*http.Request) string { return "" }
	}
	if cfg.BucketTimeout <= 0 {
		cfg.BucketTimeout = 10 * time.Second
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, pages: p, mux: http.NewServeMux()}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", staticHandler(static)))
	s.mux.HandleFunc("GET /{$}", s.fleet)
	s.mux.HandleFunc("GET /accounts/{account}", s.account)
	s.mux.HandleFunc("GET /accounts/{account}/partitions/{dataset}/{day}", s.partition)
	s.mux.HandleFunc("GET /actions/reexport", s.action(s.confirmReexport))
	s.mux.HandleFunc("POST /actions/reexport", s.action(s.postReexport))
	s.mux.HandleFunc("GET /actions/retry", s.action(s.confirmRetry))
	s.mux.HandleFunc("POST /actions/retry", s.action(s.postRetry))
	// The action's earlier name: bookmarks and confirmation pages open
	// from before still work.
	s.mux.HandleFunc("GET /actions/requeue", s.action(s.confirmRetry))
	s.mux.HandleFunc("POST /actions/requeue", s.action(s.postRetry))
	s.mux.HandleFunc("GET /actions/account", s.action(s.confirmEnable))
	s.mux.HandleFunc("POST /actions/account", s.action(s.postEnable))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, http.StatusNotFound, "No such page: "+r.URL.Path)
	})
	return s, nil
}

// ServeHTTP answers r after the host check, with the security headers on
// every response.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	if len(s.cfg.Hosts) > 0 && !s.hostAllowed(r.Host) {
		http.Error(w, "daybook console: unexpected Host header "+r.Host+"; open the address daybook console printed", http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// staticHandler serves the embedded assets, cached for an hour.
func staticHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// now is the console's clock in UTC.
func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

// closedThrough is the account's last closed day now.
func (s *Server) closedThrough(acct account.Account) civil.Date {
	return acct.WithDefaults(s.cfg.SettleDelay).ClosedThrough(s.now())
}

// getAccount reads an account; a missing one is a 404 page, and ok false.
func (s *Server) getAccount(w http.ResponseWriter, r *http.Request, id string) (account.Account, bool) {
	if !account.ValidID(id) {
		s.problem(w, r, http.StatusBadRequest, "“"+id+"” is not an account id (acct_ and 16 lowercase base32 characters).")
		return account.Account{}, false
	}
	acct, err := s.cfg.Ledger.GetAccount(r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		s.problem(w, r, http.StatusNotFound, "No account "+id+": it was never registered, or it was deleted.")
		return acct, false
	}
	if err != nil {
		s.failed(w, r, err)
		return acct, false
	}
	return acct, true
}

// failed answers an error reading or writing the deployment: 502, since
// the console itself is fine and what it talks to is not.
func (s *Server) failed(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Log.Error("console request failed", "method", r.Method, "path", r.URL.Path, "error", err.Error())
	s.problem(w, r, http.StatusBadGateway, "The deployment did not answer as expected: "+err.Error())
}
