package cichecks

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/daybook-dev/daybook/shared/devkit/hostbuild"
)

// TestLambdaTagsAreTheTestedOnes: the tags `make build` and `sam build`
// give the Lambda bootstraps (the Makefile's LAMBDA_TAGS) are the tags the
// tests build them with (hostbuild.Tags), its LAMBDA_FLAGS hostbuild's
// flags, and every bootstrap build line uses them.
func TestLambdaTagsAreTheTestedOnes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LAMBDA_TAGS\s*:=\s*(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no LAMBDA_TAGS")
	}
	if got := string(m[1]); got != hostbuild.Tags {
		t.Errorf("Makefile LAMBDA_TAGS %q, hostbuild.Tags %q: the tests build other binaries than ship", got, hostbuild.Tags)
	}
	want := `-tags $(LAMBDA_TAGS) -trimpath -ldflags "` + hostbuild.LDFlags + `"`
	if f := regexp.MustCompile(`(?m)^LAMBDA_FLAGS\s*:=\s*(.*?)\s*$`).FindSubmatch(b); f == nil || string(f[1]) != want {
		t.Errorf("the Makefile's LAMBDA_FLAGS is not %s (hostbuild's flags): %q", want, bytes.Join(f, []byte(" | ")))
	}
	builds := regexp.MustCompile(`(?m)^\t.*\$\(GO\) build .*\./functions/\S+$`).FindAll(b, -1)
	if len(builds) == 0 {
		t.Fatal("no function build line found in the Makefile")
	}
	for _, line := range builds {
		if !strings.Contains(string(line), "$(LAMBDA_FLAGS)") {
			t.Errorf("a function is built without $(LAMBDA_FLAGS): %s", strings.TrimSpace(string(line)))
		}
	}
}

// TestDataFunctionsLinkNoTemplates: built with the Lambda tags, the
// sweeper and the exporter link neither text/template nor html/template.
// Templates call methods by name, and a binary that can do that keeps
// every exported method of every type it links (the exporter's Glue client
// alone carries ~900): the exporter would be half as large again, and its
// resident set at a day's peak larger. The exporter built without
// grpcnotrace links them (through gRPC's golang.org/x/net/trace), which
// shows the check can tell.
func TestDataFunctionsLinkNoTemplates(t *testing.T) {
	templates := func(tags string, pkgs ...string) []string {
		t.Helper()
		return linked(t, tags, func(p string) bool { return p == "text/template" || p == "html/template" }, pkgs...)
	}
	if found := templates(hostbuild.Tags, "./functions/sweeper", "./functions/exporter"); len(found) > 0 {
		t.Errorf("with tags %s, the sweeper or the exporter links %s", hostbuild.Tags, strings.Join(found, ", "))
	}
	if found := templates("lambda.norpc", "./functions/exporter"); len(found) == 0 {
		t.Error("the exporter built without grpcnotrace links no template package: the check cannot tell")
	}
}
