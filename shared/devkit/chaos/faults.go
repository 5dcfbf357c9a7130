package chaos

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/daybook-dev/daybook/shared/layout"
)

// Step is the part of the commit protocol a store request belongs to, read
// from the request alone (method, key, query).
type Step string

// The steps, in protocol order. StepDelivery is the day's delivery
// manifest, written after the ledger recorded the outcome.
const (
	StepBegin    Step = "1-begin"    // GET and DELETE of the old _SUCCESS
	StepData     Step = "2-data"     // part-* objects: PUT, multipart create, parts, complete, abort
	StepStale    Step = "3-stale"    // listing the partition, DeleteObjects, listing and aborting orphaned uploads
	StepManifest Step = "4-manifest" // _manifest.json and _load/*
	StepSuccess  Step = "5-success"  // PUT _SUCCESS
	StepDelivery Step = "6-delivery" // <prefix>/v1/_manifests/dt=.../manifest.json
	StepIceberg  Step = "iceberg"    // a dataset's Iceberg table files (<dataset>/metadata/...)
	StepOther    Step = "other"
)

// Steps lists the steps in order.
var Steps = []Step{StepBegin, StepData, StepStale, StepManifest, StepSuccess, StepDelivery, StepIceberg, StepOther}

// Kind is a fault the proxy injects into one request.
type Kind string

// The kinds. A 500 or 503 is answered without reaching the store; a reset
// closes the connection before the request reaches it; a drop forwards the
// request (it takes effect) and closes the connection instead of answering;
// the kills SIGKILL the exporter before the request is forwarded, or after
// it took effect.
const (
	KindNone       Kind = ""
	Kind500        Kind = "http-500"
	Kind503        Kind = "http-503"
	KindReset      Kind = "conn-reset"
	KindDrop       Kind = "lost-response"
	KindKillBefore Kind = "kill-before"
	KindKillAfter  Kind = "kill-after"
	// KindOutage answers 503 to a request and to the next outageRepeats
	// times it is sent: more than the SDK's attempts, so the export fails
	// and the failure goes through the ledger.
	KindOutage Kind = "outage-503"
)

// outageRepeats is how many more times an outage answers the same request.
const outageRepeats = 3

// Kinds lists the kinds that are faults.
var Kinds = []Kind{Kind500, Kind503, KindReset, KindDrop, KindOutage, KindKillBefore, KindKillAfter}

// Rates are the probabilities, per S3 request, of each fault.
type Rates struct {
	Kill  float64 // split evenly between kill-before and kill-after
	Error float64 // split evenly between 500 and 503
	Reset float64
	Drop  float64
	// Outage starts an outage of one request (see KindOutage).
	Outage float64
	// CreateDrop is the probability that the answer to a
	// CreateMultipartUpload is lost (the SDK then starts a second upload).
	CreateDrop float64
	// DeliveryKill is the probability that the exporter is killed just
	// before it writes a day's delivery manifest: after the ledger recorded
	// the run, the window a redelivery must close.
	DeliveryKill float64
}

// request is what the proxy knows of one store request.
type request struct {
	store  string // StoreS3, StoreGCS or StoreAzure
	step   Step
	create bool   // CreateMultipartUpload (a GCS resumable session's start)
	write  bool   // the request writes the object at key
	key    string // object key (bucket-relative); the prefix of a listing
	id     string // method, key and query without per-upload ids: the identity a decision is drawn for
}

// The stores a proxy stands in front of.
const (
	StoreS3    = "s3"
	StoreGCS   = "gcs"
	StoreAzure = "azure"
)

// classify reads a path-style S3 request.
func classify(r *http.Request) request {
	path := strings.TrimPrefix(r.URL.Path, "/")
	_, key, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	req := request{store: StoreS3, key: key, id: identity(r, "uploadId")}
	_, uploads := q["uploads"]
	_, del := q["delete"]
	switch {
	case q.Get("list-type") == "2":
		req.key, req.step = q.Get("prefix"), StepStale
	case uploads && r.Method == http.MethodGet:
		req.key, req.step = q.Get("prefix"), StepStale
	case del && r.Method == http.MethodPost:
		req.step = StepStale
	default:
		req.write = r.Method == http.MethodPut || r.Method == http.MethodPost
		req.step = keyStep(key, req.write)
		req.create = req.step == StepData && uploads && r.Method == http.MethodPost
	}
	return req
}

// identity is a request's method, path and query without the parameters
// named (per-upload ids): the identity a fault decision is drawn for.
func identity(r *http.Request, without ...string) string {
	stable := url.Values{}
	for k, v := range r.URL.Query() {
		if !slices.Contains(without, k) {
			stable[k] = v
		}
	}
	return r.Method + " " + strings.TrimPrefix(r.URL.Path, "/") + "?" + stable.Encode()
}

// keyStep is the step of a request on one object, by its key and whether
// it writes the object.
func keyStep(key string, write bool) Step {
	switch {
	case strings.HasSuffix(key, "/"+layout.SuccessName):
		if write {
			return StepSuccess
		}
		return StepBegin
	case strings.Contains(key, "/"+layout.DeliveryManifestsDir+"/"):
		return StepDelivery
	case strings.HasSuffix(key, "/"+layout.ManifestName), strings.Contains(key, "/"+layout.LoadDir+"/"):
		return StepManifest
	case layout.IsDataKey(key):
		return StepData
	case strings.Contains(key, "/"+layout.TableDir+"/"):
		return StepIceberg
	}
	return StepOther
}

// classifyGCS reads a request of Google Cloud Storage's JSON API:
// /storage/v1/b/<bucket>/o[/<object>] (read, delete, list) and
// /upload/storage/v1/b/<bucket>/o?uploadType=...&name=<object> (a
// one-request upload, a resumable session's start, and the session's
// requests, whose Location fake-gcs-server gives that form).
func classifyGCS(r *http.Request) request {
	q := r.URL.Query()
	req := request{store: StoreGCS, id: identity(r, "upload_id")}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/upload/storage/v1/b/"):
		req.key, req.write = q.Get("name"), true
		req.step = keyStep(req.key, true)
		req.create = req.step == StepData && q.Get("uploadType") == "resumable" && r.Method == http.MethodPost
	case strings.HasPrefix(path, "/storage/v1/b/"):
		rest := strings.TrimPrefix(path, "/storage/v1/b/")
		if _, key, ok := strings.Cut(rest, "/o/"); ok {
			req.key, req.step = key, keyStep(key, false)
		} else if strings.HasSuffix(rest, "/o") {
			req.key, req.step = q.Get("prefix"), StepStale
		} else {
			req.step = StepOther
		}
	default:
		req.step = StepOther
	}
	return req
}

// classifyAzure reads a path-style Blob service request,
// /<storage account>/<container>[/<blob>]: a container's listing (and
// batch) is the stale step; a blob's Put Blob, Put Block and Put Block
// List write it.
func classifyAzure(r *http.Request) request {
	q := r.URL.Query()
	req := request{store: StoreAzure, id: identity(r, "blockid")}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 3 || parts[2] == "" {
		req.key, req.step = q.Get("prefix"), StepStale
		if q.Get("comp") != "list" && q.Get("comp") != "batch" {
			req.step = StepOther
		}
		return req
	}
	req.key, req.write = parts[2], r.Method == http.MethodPut
	req.step = keyStep(req.key, req.write)
	return req
}

// Faults decides, counts and records the faults of a run. Each decision is
// a function of the seed, the request's identity and how many times that
// identity was seen, never of a shared random stream, so concurrent
// exporters do not shift each other's faults: a seed reproduces the same
// fault for the same request of the same partition's history. Kills stop
// once the budget is spent. It is safe for concurrent use.
type Faults struct {
	seed  uint64
	rates Rates

	mu       sync.Mutex
	seen     map[string]int
	outage   map[string]int // request identity -> answers still to fail
	kills    int
	maxKills int
	byKind   map[Kind]map[Step]int
	requests map[Step]int
	stores   map[string]*StoreFaults
	targets  map[target]int // kills owed: 0 owed, 1 in flight, 2 done
	commits  []Commit
}

// Commit is a _SUCCESS the store accepted: a generation of a partition.
type Commit struct {
	Partition  string // partition prefix
	Generation int64
	RunID      string
}

// NewFaults returns the faults of a run of seed with at most maxKills kills.
func NewFaults(seed uint64, rates Rates, maxKills int) *Faults {
	return &Faults{seed: seed, rates: rates, maxKills: maxKills, seen: map[string]int{}, outage: map[string]int{},
		byKind: map[Kind]map[Step]int{}, requests: map[Step]int{}, stores: map[string]*StoreFaults{}}
}

// target is a store's step at which a kill is owed (KillAt).
type target struct {
	store string
	step  Step
}

// KillAt owes one kill at the first write of each step on store, whatever
// the draws and the budget say: a short run kills there for sure. It is
// retried at the next such write while it finds no process to kill.
func (f *Faults) KillAt(store string, steps ...Step) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.targets == nil {
		f.targets = map[target]int{}
	}
	for _, s := range steps {
		f.targets[target{store, s}] = 0
	}
}

// Owed lists the kills KillAt owes that were not made yet.
func (f *Faults) Owed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for t, st := range f.targets {
		if st != 2 {
			out = append(out, t.store+" "+string(t.step))
		}
	}
	slices.Sort(out)
	return out
}

// StoreFaults counts one store's requests and the faults injected into
// them, by step.
type StoreFaults struct {
	Requests map[Step]int
	Faults   map[Kind]map[Step]int
}

func (f *Faults) store(name string) *StoreFaults {
	s := f.stores[name]
	if s == nil {
		s = &StoreFaults{Requests: map[Step]int{}, Faults: map[Kind]map[Step]int{}}
		f.stores[name] = s
	}
	return s
}

// decide draws the fault for req.
func (f *Faults) decide(req request) Kind {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[req.id]++
	f.requests[req.step]++
	f.store(req.store).Requests[req.step]++
	if f.outage[req.id] > 0 {
		f.outage[req.id]--
		return KindOutage
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%d", f.seed, req.id, f.seen[req.id]))
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / (1 << 53)
	half := h[8]&1 == 0
	if t := (target{req.store, req.step}); req.write && f.targets != nil {
		if st, ok := f.targets[t]; ok && st == 0 {
			f.targets[t] = 1
			f.kills++
			if half {
				return KindKillBefore
			}
			return KindKillAfter
		}
	}
	r := f.rates
	v := float64(binary.BigEndian.Uint64(h[16:24])>>11) / (1 << 53)
	switch {
	case req.create && v < r.CreateDrop:
		return KindDrop
	case req.step == StepDelivery && v < r.DeliveryKill && f.kills < f.maxKills:
		f.kills++
		return KindKillBefore
	}
	switch {
	case u < r.Kill:
		if f.kills >= f.maxKills {
			return KindNone
		}
		f.kills++ // reserved; unreserve if there was nothing to kill
		if half {
			return KindKillBefore
		}
		return KindKillAfter
	case u < r.Kill+r.Error:
		if half {
			return Kind500
		}
		return Kind503
	case u < r.Kill+r.Error+r.Reset:
		return KindReset
	case u < r.Kill+r.Error+r.Reset+r.Drop:
		return KindDrop
	case u < r.Kill+r.Error+r.Reset+r.Drop+r.Outage:
		f.outage[req.id] = outageRepeats
		return KindOutage
	}
	return KindNone
}

// done records a fault that was injected; a kill that found no process is
// given back to the budget and recorded as the reset it became.
func (f *Faults) done(k Kind, req request, killed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := target{req.store, req.step}
	if st, ok := f.targets[t]; ok && st == 1 && req.write && (k == KindKillBefore || k == KindKillAfter) {
		f.targets[t] = 0 // found nothing to kill: owed still
		if killed {
			f.targets[t] = 2
		}
	}
	if (k == KindKillBefore || k == KindKillAfter) && !killed {
		f.kills--
		k = KindReset
	}
	if f.byKind[k] == nil {
		f.byKind[k] = map[Step]int{}
	}
	f.byKind[k][req.step]++
	s := f.store(req.store)
	if s.Faults[k] == nil {
		s.Faults[k] = map[Step]int{}
	}
	s.Faults[k][req.step]++
}

func (f *Faults) commit(c Commit) {
	f.mu.Lock()
	f.commits = append(f.commits, c)
	f.mu.Unlock()
}

// Kills is the number of exporters killed so far.
func (f *Faults) Kills() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kills
}

// Counts returns the faults injected, by kind and step, and the requests
// seen by step.
func (f *Faults) Counts() (map[Kind]map[Step]int, map[Step]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byKind := map[Kind]map[Step]int{}
	for k, m := range f.byKind {
		byKind[k] = map[Step]int{}
		for s, n := range m {
			byKind[k][s] = n
		}
	}
	req := map[Step]int{}
	for s, n := range f.requests {
		req[s] = n
	}
	return byKind, req
}

// Stores returns each store's requests and faults.
func (f *Faults) Stores() map[string]StoreFaults {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]StoreFaults{}
	for name, s := range f.stores {
		c := StoreFaults{Requests: maps.Clone(s.Requests), Faults: map[Kind]map[Step]int{}}
		for k, m := range s.Faults {
			c.Faults[k] = maps.Clone(m)
		}
		out[name] = c
	}
	return out
}

// Commits returns every _SUCCESS the store accepted, in the order it did.
func (f *Faults) Commits() []Commit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commits)
}
