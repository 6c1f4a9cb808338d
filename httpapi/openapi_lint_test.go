package httpapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAPILintsClean lints /openapi.yaml with a real validator (@redocly/cli,
// pinned; .ci/install-mcp installs it): no errors.
func TestOpenAPILintsClean(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../.ci/mcp/node_modules/.bin/redocly")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("@redocly/cli is not installed (.ci/install-mcp installs it): %v", err)
		}
		t.Skip("@redocly/cli is not installed; run .ci/install-mcp")
	}
	cmd := exec.Command(bin, "lint", "openapi.yaml", "--format=stylish")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), " error ") {
		t.Fatalf("redocly lint: %v\n%s", err, out)
	}
}
