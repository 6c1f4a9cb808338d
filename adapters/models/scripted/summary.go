package scripted

import (
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// sectionLines bounds each section a scripted summary carries forward.
const sectionLines = 8

// summarise answers a compaction request offline and deterministically: an
// extractive summary that carries the previous summary's sections forward, takes the
// goal from the latest user message, progress from the answers, evidence from the
// tool results and risks from the failures. (The engine adds every identifier the
// summary lacks.)
func summarise(req fsm.ModelRequest) fsm.ModelResponse {
	bodies := map[string][]string{}
	for _, it := range req.Items[:max(0, len(req.Items)-1)] { // the last item is the ask
		c := it.Content
		switch {
		case strings.HasPrefix(c, "<context_summary"):
			inner := c[strings.Index(c, "\n## ")+1 : strings.LastIndex(c, "</context_summary>")]
			for _, s := range contextmgr.ParseSummary(inner) {
				if s.Body != "(nothing recorded)" {
					bodies[s.Title] = append(bodies[s.Title], strings.Split(s.Body, "\n")...)
				}
			}
		case strings.HasPrefix(c, "[result of "):
			tool := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(c, "\n", 2)[0], "[result of "), "]")
			evidence := firstLine(stripMarker(c))
			bodies["Tool Evidence"] = append(bodies["Tool Evidence"], fmt.Sprintf("- %s: %s", tool, evidence))
			if strings.Contains(c, `"error":{`) {
				bodies["Risks"] = append(bodies["Risks"], fmt.Sprintf("- %s failed: %s", tool, evidence))
			}
		case strings.HasPrefix(c, "[called "):
			bodies["Decisions"] = append(bodies["Decisions"], "- "+clip(c, 160))
		case it.Role == "user":
			bodies["Goal"] = []string{clip(c, 400)}
		case it.Role == "assistant":
			bodies["Progress"] = append(bodies["Progress"], "- "+clip(c, 200))
		}
	}
	var b strings.Builder
	for _, title := range events.SummarySections {
		lines := bodies[title]
		if len(lines) > sectionLines {
			lines = lines[len(lines)-sectionLines:]
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", title, strings.Join(lines, "\n"))
	}
	text := strings.TrimSpace(b.String())
	return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: text},
		Usage: events.Usage{InputTokens: int64(len(req.Items)) * 10, OutputTokens: int64(len(text)/4 + 1)}}
}

// stripMarker drops the untrusted-data wrapper of a tool result.
func stripMarker(c string) string {
	lines := strings.Split(c, "\n")
	var out []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "<tool_output") || strings.HasPrefix(l, "</tool_output") || strings.HasPrefix(l, "The text between these tags") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return clip(s, 160)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
