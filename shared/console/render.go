package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/daybook-dev/daybook/shared/ops"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"fleet", "account", "partition", "confirm", "done", "problem"}

type pages struct{ t map[string]*template.Template }

var funcs = template.FuncMap{
	"bytes":       ops.HumanBytes,
	"duration":    ops.FormatDuration,
	"num":         thousands,
	"symbol":      func(p ops.Phase) string { return string(p.Symbol()) },
	"legend":      func(p ops.Phase) string { return p.Legend() },
	"blankLegend": func() string { return ops.BlankLegend },
	"phases":      func() []ops.Phase { return ops.Phases },
	"count":       func(m map[ops.Phase]int, p ops.Phase) int { return m[p] },
	"countsText":  ops.CountsText,
	"plural":      plural,
	"shortTime":   shortTime,
	"causeCode":   func(e string) string { c, _, _ := ops.CauseOfError(e); return string(c) },
	"causeWhat":   func(e string) string { _, w, _ := ops.CauseOfError(e); return w },
	"causeFix":    func(e string) string { _, _, f := ops.CauseOfError(e); return f },
	"rawError":    ops.RawError,
	// A bucket read problem: its words, and its raw error (folded away).
	"problemWords": func(p string) string { w, _, _ := strings.Cut(p, readProblemRaw); return w },
	"problemRaw":   func(p string) string { _, r, _ := strings.Cut(p, readProblemRaw); return r },
}

func loadPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// view is what every page's layout reads, around the page's own data.
type view struct {
	Title      string
	Deployment string
	ReadOnly   bool
	Identity   string
	CSRF       string
	Crumbs     []crumb
	Page       any
	// AsOf is when the page was read (UTC, ISO 8601); Refresh, on the read
	// pages, reloads them every RefreshSeconds.
	AsOf    string
	Refresh int
}

// RefreshSeconds is how often the fleet, account and partition pages
// reload themselves.
const RefreshSeconds = 60

// refreshed are the pages that reload themselves: they only read.
var refreshed = map[string]bool{"fleet": true, "account": true, "partition": true}

// crumb is one link of the breadcrumb trail; the last has no Href.
type crumb struct{ Text, Href string }

// render writes the page name with data, status code and the session's
// token for its forms. A template that fails is a 500 before anything is
// written.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name, title string, crumbs []crumb, data any) {
	v := view{
		Title: title, Deployment: s.cfg.Deployment, ReadOnly: s.cfg.ReadOnly, Identity: s.cfg.Identity(r),
		CSRF: s.csrfToken(w, r), Crumbs: crumbs, Page: data,
		AsOf: s.cfg.Now().UTC().Format("2006-01-02T15:04:05Z"),
	}
	if refreshed[name] {
		v.Refresh = RefreshSeconds
	}
	var buf bytes.Buffer
	if err := s.pages.t[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		s.cfg.Log.Error("console template", "page", name, "error", err.Error())
		http.Error(w, "daybook console: the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// problemPage is a refusal or an error, in words.
type problemPage struct {
	Code    int
	Heading string
	Message string
	// Back is the page the user came from on this console, if known.
	Back string
}

// problemHeadings say a refusal in words; other codes use the status text.
var problemHeadings = map[int]string{
	http.StatusBadRequest:          "That request is not right",
	http.StatusForbidden:           "Refused",
	http.StatusNotFound:            "Not found",
	http.StatusUnprocessableEntity: "Refused",
	http.StatusBadGateway:          "The deployment did not answer",
	http.StatusServiceUnavailable:  "Not available here",
}

// problem answers code with a page that says msg.
func (s *Server) problem(w http.ResponseWriter, r *http.Request, code int, msg string) {
	back := ""
	if ref, err := url.Parse(r.Header.Get("Referer")); err == nil && ref.Host == r.Host && strings.HasPrefix(ref.Path, "/") && ref.RequestURI() != r.URL.RequestURI() {
		back = ref.RequestURI()
	}
	if acct := r.URL.Query().Get("account"); back == "" && strings.HasPrefix(r.URL.Path, "/actions/") && acct != "" {
		back = "/accounts/" + url.PathEscape(acct) // the account page holds the action's form
	}
	heading := problemHeadings[code]
	if heading == "" {
		heading = http.StatusText(code)
	}
	s.render(w, r, code, "problem", heading, []crumb{{Text: "Fleet", Href: "/"}, {Text: heading}},
		problemPage{Code: code, Heading: heading, Message: msg, Back: back})
}

// thousands writes n with thin separators: 1234567 -> "1,234,567".
func thousands(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	default:
		return fmt.Sprint(n)
	}
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// plural is "1 file", "2 files".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return thousands(n) + " " + word + "s"
}

// shortTime shortens a UTC timestamp of FormatTime to "2026-11-30
// 09:00Z": the date stays whole (ISO), the seconds go.
func shortTime(ts string) string {
	if len(ts) != len("2006-01-02T15:04:05Z") {
		return ts
	}
	return ts[:10] + " " + ts[11:16] + "Z"
}
