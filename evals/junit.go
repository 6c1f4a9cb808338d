package evals

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// JUnit writes the report as JUnit XML in the common (Apache Ant) schema, which
// Jenkins' schema accepts too: one testsuite, a testcase a case — failed with its
// failures when it missed its pass rate, errored (type needs_judge) when only runs
// waiting for a judge keep it from it. Each case's passes, runs, tokens, cost and
// sessions are properties of the suite ("<case>.passes", …); system-out holds the
// table.
func (r *Report) JUnit(w io.Writer) error {
	type text struct {
		Text string `xml:",cdata"`
	}
	type outcome struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",cdata"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Error     *outcome `xml:"error,omitempty"`
		Failure   *outcome `xml:"failure,omitempty"`
	}
	type testsuite struct {
		Name       string     `xml:"name,attr"`
		Package    string     `xml:"package,attr"`
		ID         int        `xml:"id,attr"`
		Timestamp  string     `xml:"timestamp,attr"`
		Hostname   string     `xml:"hostname,attr"`
		Tests      int        `xml:"tests,attr"`
		Failures   int        `xml:"failures,attr"`
		Errors     int        `xml:"errors,attr"`
		Time       string     `xml:"time,attr"`
		Properties []property `xml:"properties>property"`
		Testcases  []testcase `xml:"testcase"`
		SystemOut  text       `xml:"system-out"`
		SystemErr  string     `xml:"system-err"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Suites  []testsuite `xml:"testsuite"`
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var table bytes.Buffer
	if err := r.Table(&table); err != nil {
		return err
	}
	ts := testsuite{Name: r.Suite, Package: r.Suite, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05"), Hostname: host,
		Tests: len(r.Cases), Time: secs(r.Took), Properties: []property{{"run_id", r.RunID}}, SystemOut: text{xmlText(table.String())}}
	for _, c := range r.Cases {
		ts.Properties = append(ts.Properties, property{c.Name + ".passes", fmt.Sprint(c.Passes)}, property{c.Name + ".runs", fmt.Sprint(c.Runs)},
			property{c.Name + ".tokens", fmt.Sprint(c.Tokens)}, property{c.Name + ".cost", fmt.Sprint(c.Cost)},
			property{c.Name + ".sessions", strings.Join(c.Sessions, " ")})
		tc := testcase{Name: c.Name, Classname: r.Suite, Time: secs(c.P50)}
		msg := fmt.Sprintf("%d of %d runs passed (%.0f%% needed)", c.Passes, c.Runs, c.Required*100)
		switch c.Status {
		case StatusFailed:
			ts.Failures++
			tc.Failure = &outcome{Type: "eval", Message: msg, Text: xmlText(strings.Join(c.Failures, "\n"))}
		case StatusNeedsJudge:
			ts.Errors++
			tc.Error = &outcome{Type: StatusNeedsJudge, Message: fmt.Sprintf("%s; %d wait for a judge", msg, c.NeedsJudge),
				Text: xmlText(strings.Join(append(append([]string{}, c.Failures...), c.Waiting...), "\n"))}
		}
		ts.Testcases = append(ts.Testcases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(testsuites{Suites: []testsuite{ts}}); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// xmlText is s with each character XML 1.0 does not allow (control characters, a
// lone surrogate, U+FFFE, U+FFFF) as U+FFFD — what the encoder does in attributes,
// and not in CDATA.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return '\uFFFD'
	}, s)
}
