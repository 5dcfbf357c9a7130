package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileFlag: --profile P takes the deployment's credentials, region
// and endpoint from the shared config's profile P, as the operating guide
// says (here one whose endpoint is the test's moto); without it, a
// deployment described by its variables alone has no credentials, and the
// error says to pass --profile; a profile the config lacks is named.
func TestProfileFlag(t *testing.T) {
	s := deployed(t)
	dir := t.TempDir()
	// The deployment's variables, without the endpoint, region and keys
	// the local stacks' env files carry: those come from the profile.
	vars := map[string]string{"DAYBOOK_STAGE": "clitest"}
	for out, v := range stackOutputVars {
		if s.outputs[out] != "" {
			vars[v] = s.outputs[out]
		}
	}
	b, _ := json.Marshal(map[string]map[string]string{"ExporterFunction": vars})
	envFile := filepath.Join(dir, "env.json")
	if err := os.WriteFile(envFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[profile ops]\nregion = us-east-1\nendpoint_url = "+srv.URL+
		"\naws_access_key_id = testing\naws_secret_access_key = testing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_EC2_METADATA_DISABLED"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no instance to ask on this machine

	a, _, _ := testApp(t)
	r := execute(t, a, "status", "--env-file", envFile, "--profile", "ops")
	if r.code != 0 || !strings.Contains(r.stderr, "the deployment in "+envFile+" (region us-east-1, profile ops)") {
		t.Errorf("with --profile ops: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = execute(t, a, "status", "--env-file", envFile)
	if r.code != 1 || !strings.Contains(r.stderr, "no AWS credentials: pass --profile") {
		t.Errorf("without --profile: exit %d\nstderr: %s", r.code, r.stderr)
	}
	r = execute(t, a, "status", "--env-file", envFile, "--profile", "nosuch")
	if r.code != 1 || !strings.Contains(r.stderr, "nosuch") {
		t.Errorf("with --profile nosuch: exit %d\nstderr: %s", r.code, r.stderr)
	}
}
