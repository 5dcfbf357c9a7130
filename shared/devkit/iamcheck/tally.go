package iamcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// What a test binary's proxies checked: every (function, action, key
// prefix) triple with its count, and every statement that allowed a call.
// A test binary writes it when its tests end (Finish); Summarize sums the
// files of a whole run against the template.

type counts struct {
	mu                        sync.Mutex
	triples                   map[Triple]int
	allowed                   map[StatementID]int
	keys                      map[KeyPattern]int
	checked, denied, sessions int
}

var tally = &counts{triples: map[Triple]int{}, allowed: map[StatementID]int{}, keys: map[KeyPattern]int{}}

func (c *counts) add(fn, role string, ch Check, d Decision, sts []Statement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked++
	if !d.Allowed {
		c.denied++
	}
	c.triples[Triple{Function: fn, Action: ch.Action, Prefix: ch.Prefix}]++
	for _, id := range d.Allowing {
		c.allowed[StatementID{Role: role, ID: id}]++
		for _, s := range sts {
			if s.ID == id {
				for _, kp := range leadingKeyPatterns(role, s, ch.Request) {
					c.keys[kp]++
				}
			}
		}
	}
}

// KeyPattern is one value of a statement's dynamodb:LeadingKeys condition.
type KeyPattern struct {
	Role      string `json:"role"`
	Statement string `json:"statement"`
	Pattern   string `json:"pattern"`
}

// leadingKeyPatterns are the values of s's dynamodb:LeadingKeys
// conditions that r's leading keys matched.
func leadingKeyPatterns(role string, s Statement, r Request) []KeyPattern {
	var out []KeyPattern
	for _, c := range s.Conditions {
		if !strings.EqualFold(c.Key, "dynamodb:LeadingKeys") {
			continue
		}
		match := eq
		if strings.Contains(c.Operator, "Like") {
			match = glob
		}
		for _, p := range c.Values {
			for _, v := range r.Context["dynamodb:LeadingKeys"] {
				if match(p, v) {
					out = append(out, KeyPattern{Role: role, Statement: s.ID, Pattern: p})
					break
				}
			}
		}
	}
	return out
}

// keyPatterns lists the LeadingKeys values of the statements of role's
// own policies.
func (p *Policies) keyPatterns(role string) []KeyPattern {
	var out []KeyPattern
	for _, s := range p.roles[role] {
		if !slices.Contains(p.all[role], s.ID) {
			continue
		}
		for _, c := range s.Conditions {
			if strings.EqualFold(c.Key, "dynamodb:LeadingKeys") {
				for _, v := range c.Values {
					out = append(out, KeyPattern{Role: role, Statement: s.ID, Pattern: v})
				}
			}
		}
	}
	return out
}

func (c *counts) session(string) {
	c.mu.Lock()
	c.sessions++
	c.mu.Unlock()
}

// Triple is one function's action on one kind of key: the leading key's
// prefix for DynamoDB (P#, ACCOUNTS, ...), the resource's kind otherwise
// (object, bucket, queue jobs, event-bus, role, table, parameter ...).
type Triple struct {
	Function string `json:"function"`
	Action   string `json:"action"`
	Prefix   string `json:"prefix"`
}

// StatementID names a statement of a role.
type StatementID struct {
	Role string `json:"role"`
	ID   string `json:"statement"`
}

func (s StatementID) String() string { return s.Role + "/" + s.ID }

// Summary is what one test binary's checks came to.
type Summary struct {
	Package string `json:"package"`
	// Checked counts authorizations (a call may need several), Denied
	// those refused, Sessions the calls made with a function's assumed
	// customer-role credentials (not the template's to allow).
	Checked  int `json:"checked"`
	Denied   int `json:"denied"`
	Sessions int `json:"sessions"`
	Triples  []struct {
		Triple
		Count int `json:"count"`
	} `json:"triples"`
	Statements []struct {
		StatementID
		Count int `json:"count"`
	} `json:"statements"`
	// LeadingKeys counts, per value of a statement's
	// dynamodb:LeadingKeys condition, the allowed calls whose leading key
	// it matched.
	LeadingKeys []struct {
		KeyPattern
		Count int `json:"count"`
	} `json:"leading_keys"`
}

// Current is the process's tally so far.
func Current(pkg string) Summary {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	s := Summary{Package: pkg, Checked: tally.checked, Denied: tally.denied, Sessions: tally.sessions}
	for _, t := range slices.SortedFunc(maps.Keys(tally.triples), compareTriples) {
		s.Triples = append(s.Triples, struct {
			Triple
			Count int `json:"count"`
		}{t, tally.triples[t]})
	}
	for _, id := range slices.SortedFunc(maps.Keys(tally.allowed), func(a, b StatementID) int { return strings.Compare(a.String(), b.String()) }) {
		s.Statements = append(s.Statements, struct {
			StatementID
			Count int `json:"count"`
		}{id, tally.allowed[id]})
	}
	for _, k := range slices.SortedFunc(maps.Keys(tally.keys), func(a, b KeyPattern) int {
		return strings.Compare(a.Role+a.Statement+a.Pattern, b.Role+b.Statement+b.Pattern)
	}) {
		s.LeadingKeys = append(s.LeadingKeys, struct {
			KeyPattern
			Count int `json:"count"`
		}{k, tally.keys[k]})
	}
	return s
}

func compareTriples(a, b Triple) int {
	return strings.Compare(a.Function+"\x00"+a.Action+"\x00"+a.Prefix, b.Function+"\x00"+b.Action+"\x00"+b.Prefix)
}

// SummaryDir is where test binaries write their summaries, under the
// module root.
const SummaryDir = ".local/iamcheck"

// Finish writes the process's tally, when it checked anything, to
// <module root>/.local/iamcheck/<package dir>.json: a package's TestMain
// calls it after m.Run (mototest.RunTests does).
func Finish() error {
	s := Current("")
	if s.Checked == 0 && s.Sessions == 0 {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return fmt.Errorf("iamcheck: no go.mod above %s", wd)
		}
		root = parent
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return err
	}
	s.Package = filepath.ToSlash(rel)
	dir := filepath.Join(root, SummaryDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strings.ReplaceAll(s.Package, "/", "_")+".json"), append(b, '\n'), 0o644)
}

// Total is a whole run's summaries summed up against the template.
type Total struct {
	Packages                  []string
	Checked, Denied, Sessions int
	// Triples are the distinct (function, action, key prefix) triples
	// exercised, with their counts.
	Triples map[Triple]int
	// Reached and Unreached list the statements of the template's own
	// policies (not the AWS managed ones) that allowed at least one call,
	// and those that allowed none.
	Reached, Unreached []StatementID
	// UnusedKeys lists the values of reached statements'
	// dynamodb:LeadingKeys conditions that no allowed call's leading key
	// matched.
	UnusedKeys []KeyPattern
}

// Summarize reads every summary in dir and sums them up against the
// statements of p's functions.
func Summarize(dir string, p *Policies) (Total, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return Total{}, err
	}
	if len(files) == 0 {
		return Total{}, fmt.Errorf("iamcheck: no summaries in %s: run the tests first", dir)
	}
	t := Total{Triples: map[Triple]int{}}
	hit := map[StatementID]bool{}
	keyHit := map[KeyPattern]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return Total{}, err
		}
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return Total{}, fmt.Errorf("%s: %w", f, err)
		}
		t.Packages = append(t.Packages, s.Package)
		t.Checked += s.Checked
		t.Denied += s.Denied
		t.Sessions += s.Sessions
		for _, tr := range s.Triples {
			t.Triples[tr.Triple] += tr.Count
		}
		for _, st := range s.Statements {
			hit[st.StatementID] = true
		}
		for _, k := range s.LeadingKeys {
			keyHit[k.KeyPattern] = true
		}
	}
	sort.Strings(t.Packages)
	for _, fn := range p.Functions() {
		role := p.Role(fn)
		for _, id := range p.all[role] {
			sid := StatementID{Role: role, ID: id}
			if hit[sid] {
				t.Reached = append(t.Reached, sid)
			} else {
				t.Unreached = append(t.Unreached, sid)
			}
		}
		for _, k := range p.keyPatterns(role) {
			if hit[StatementID{Role: role, ID: k.Statement}] && !keyHit[k] {
				t.UnusedKeys = append(t.UnusedKeys, k)
			}
		}
	}
	return t, nil
}
