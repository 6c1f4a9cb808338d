package systemtest

import (
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
)

// TestReadmePsqlTour runs the README's psql commands, as written, with the psql shell
// against a session the demo recorded on PostgreSQL: each works on the views.
func TestReadmePsqlTour(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	if _, err := exec.LookPath("psql"); err != nil {
		if os.Getenv(postgres.TestRequireEnv) != "" {
			t.Fatal("the psql shell is not installed (.ci/run installs postgresql, which brings it)")
		}
		t.Skip("the psql shell is not installed")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Inspect a session with psql")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the psql section has no sh block")
	}
	_, errOut, err := runCLI(t, "run", "--db", dsn, "where is order 42?")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(errOut, "session ")
	session, _, _ := strings.Cut(rest, "\n")
	// As the README says: psql takes the schema from PGOPTIONS, not from the URL.
	u, _ := url.Parse(dsn)
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", m[1])
	cmd.Env = append(os.Environ(), "SESSION="+session, "TURNLOG_DB="+u.String(), "PGOPTIONS=-c search_path="+schema, "PSQL_PAGER=", "PAGER=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's psql commands: %v\n%s", err, out)
	}
	for _, want := range []string{"TurnCommitted", "lookup_order", "completed", "ok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tour shows no %q:\n%s", want, out)
		}
	}
}
