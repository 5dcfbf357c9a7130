package envdoc

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the template and the code")

const root = "../../.."

// TestConfigurationPage: docs/configuration.md is what the template, the
// code and the meanings generate, and every variable they name has a
// meaning (-update rewrites the page).
func TestConfigurationPage(t *testing.T) {
	vars, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) < 40 {
		t.Fatalf("found %d variables: the scan is broken", len(vars))
	}
	if err := Check(vars); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(root, "docs", "configuration.md")
	want := Render(vars)
	if *update {
		if err := os.WriteFile(page, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("docs/configuration.md is not what the code generates; run\n  go test ./shared/devkit/envdoc -run TestConfigurationPage -update\ngenerated:\n%s", want)
	}
}

// TestScanFindsWhatTheCodeReads: a variable the code reads but the
// meanings lack fails Check, naming it, and so does a meaning the code no
// longer has; the template's functions and parameters are read.
func TestScanFindsWhatTheCodeReads(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("template.yaml", `Parameters:
  Stage:
    Type: String
Globals:
  Function:
    Environment:
      Variables:
        DAYBOOK_STAGE: !Ref Stage
Resources:
  SweeperFunction:
    Properties:
      Environment:
        Variables:
          # a comment
          PER_ACCOUNT_CAP: "10"
      Policies: []
`)
	write("functions/sweeper/config.go", `package main
import "os"
func f() { _ = os.Getenv("GOMEMLIMIT"); _ = r.Int("NEW_KNOB_ROWS", 1) }
`)
	write("functions/sweeper/config_test.go", `package main
func g() { _ = r.Int("ONLY_IN_A_TEST", 1) }
`)
	write("shared/devkit/x/x.go", `package x
var _ = "DEVKIT_ONLY_VAR"
`)
	write("cmd/daybook/main.go", "package main\n")
	vars, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v := vars["DAYBOOK_STAGE"]; v == nil || v.Parameter != "Stage" || strings.Join(v.Functions, ",") != "every function" {
		t.Errorf("DAYBOOK_STAGE: %+v", v)
	}
	if v := vars["PER_ACCOUNT_CAP"]; v == nil || strings.Join(v.Functions, ",") != "SweeperFunction" {
		t.Errorf("PER_ACCOUNT_CAP: %+v", v)
	}
	if v := vars["GOMEMLIMIT"]; v == nil || strings.Join(v.ReadIn, ",") != "functions/sweeper" {
		t.Errorf("GOMEMLIMIT: %+v", v)
	}
	if vars["ONLY_IN_A_TEST"] != nil || vars["DEVKIT_ONLY_VAR"] != nil {
		t.Errorf("tests and devkit are not the product's code: %v", vars)
	}
	err = Check(vars)
	if err == nil || !strings.Contains(err.Error(), "NEW_KNOB_ROWS (set for [], named in [functions/sweeper]) has no meaning") {
		t.Errorf("a variable without a meaning: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "SLICE_ROWS is in shared/devkit/envdoc/meanings.go, but neither the template nor the code has it") {
		t.Errorf("a meaning nothing reads: %v", err)
	}
}
