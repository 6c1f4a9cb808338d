package turnlog_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces endpoint on loopback that decodes what it gets
// with the OpenTelemetry project's own protobuf types.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []string // service.name of each resource
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, _ := io.ReadAll(body)
	var req collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.res = append(o.res, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// attr is a span attribute's value as text ("<none>" when it has none).
func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch v := a.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			return strconv.FormatBool(v.BoolValue)
		}
	}
	return "<none>"
}

// spanTree is the spans of one turn, by id, with each span's children.
type spanTree struct {
	byID     map[string]*tracepb.Span
	children map[string][]*tracepb.Span // by parent id ("" for the roots)
}

func treeOf(spans []*tracepb.Span, turn string) spanTree {
	t := spanTree{byID: map[string]*tracepb.Span{}, children: map[string][]*tracepb.Span{}}
	for _, s := range spans {
		if attr(s, "turnlog.turn") != turn {
			continue
		}
		t.byID[hex.EncodeToString(s.SpanId)] = s
	}
	for _, s := range t.byID {
		parent := hex.EncodeToString(s.ParentSpanId)
		if _, ok := t.byID[parent]; !ok {
			parent = ""
		}
		t.children[parent] = append(t.children[parent], s)
	}
	for _, kids := range t.children {
		sort.Slice(kids, func(i, j int) bool { return attr(kids[i], "turnlog.path") < attr(kids[j], "turnlog.path") })
	}
	return t
}

var callIDs = regexp.MustCompile(`call_[0-9_]+`)

// shape is a span and its descendants as "name path" lines, indented by depth, with
// call ids written as CALL; it fails the test where a child's path does not lie
// under its parent's.
func (t spanTree) shape(tb testing.TB, s *tracepb.Span, depth int) string {
	tb.Helper()
	out := strings.Repeat("  ", depth) + s.Name + " " + callIDs.ReplaceAllString(attr(s, "turnlog.path"), "CALL") + "\n"
	for _, c := range t.children[hex.EncodeToString(s.SpanId)] {
		if p := attr(s, "turnlog.path"); p != "" && !strings.HasPrefix(attr(c, "turnlog.path"), p+"/") {
			tb.Errorf("span %s (%s) is not under its parent %s (%s)", c.Name, attr(c, "turnlog.path"), s.Name, p)
		}
		out += t.shape(tb, c, depth+1)
	}
	return out
}

// TestTracesOfTheDemo exports the demo's turns to a real OTLP/HTTP receiver and
// checks the tree of spans: parallel tools under their turn, each nested agent
// under the tool call that ran it with its own model and tool calls, GenAI names and
// attributes, and a resumed turn that emits only its new work.
func TestTracesOfTheDemo(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: demo.Config, Functions: demo.Functions(),
		OTLPEndpoint: srv.URL, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tl.Engine.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	refund := runTurn(t, tl, s.ID, "can I get a refund for order 1001?")
	runTurn(t, tl, s.ID, "where is order 987654?") // the tool fails: order not found
	parcels := runTurn(t, tl, s.ID, "check the parcels of orders 42 and 7")
	asked := runTurn(t, tl, s.ID, "refund order 42")
	if asked.Status != "suspended" {
		t.Fatalf("refund order 42: %+v", asked)
	}
	yes := true
	st, err := tl.Engine.Resume(ctx, s.ID, "alice", map[string]fsm.Answer{asked.Interrupts[0].ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := st.Wait(); err != nil || res.Status != "completed" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	if err := tl.Close(); err != nil { // sends what is batched
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.res) == 0 || recv.res[0] != "turnlog" {
		t.Fatalf("resources: %v", recv.res)
	}

	failedTools := 0
	for _, sp := range recv.spans { // a span says why it failed by code only: no words of the turn
		if m := sp.GetStatus().GetMessage(); m != "" && m != attr(sp, "error.type") {
			t.Errorf("span %s has the status message %q", sp.Name, m)
		}
		if sp.Name == "execute_tool lookup_order" && sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			failedTools++
		}
	}
	if failedTools != 1 {
		t.Errorf("%d failed lookup_order spans, want the one of order 987654", failedTools)
	}
	tree := treeOf(recv.spans, refund.TurnID)
	if len(tree.children[""]) != 1 {
		t.Fatalf("the refund turn has %d root spans", len(tree.children[""]))
	}
	root := tree.children[""][0]
	want := `invoke_agent support 
  chat scripted-support support/model/1
  chat scripted-support support/model/2
  execute_tool lookup_order support/tool/CALL
  execute_tool refund_status support/tool/CALL
`
	if got := tree.shape(t, root, 0); got != want {
		t.Fatalf("the refund turn's spans:\n%s\nwant:\n%s", got, want)
	}
	for key, v := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support", "gen_ai.conversation.id": s.ID,
		"turnlog.session": s.ID, "turnlog.app": "demo", "turnlog.status": "completed", "turnlog.resumed": "false"} {
		if got := attr(root, key); got != v {
			t.Errorf("turn span %s = %q, want %q", key, got, v)
		}
	}
	if root.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("turn span kind %v", root.Kind)
	}
	for _, c := range tree.children[hex.EncodeToString(root.SpanId)] {
		switch op := attr(c, "gen_ai.operation.name"); op {
		case "chat":
			if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(c, "gen_ai.request.model") != "scripted-support" || attr(c, "gen_ai.usage.input_tokens") == "<none>" {
				t.Errorf("chat span: %v", c)
			}
		case "execute_tool":
			if attr(c, "gen_ai.tool.name") == "<none>" || !strings.HasSuffix(attr(c, "turnlog.path"), attr(c, "gen_ai.tool.call.id")) {
				t.Errorf("tool span: %v", c)
			}
		default:
			t.Errorf("a span of operation %q", op)
		}
		if seq := attr(c, "turnlog.seq"); seq == "<none>" || seq == "0" {
			t.Errorf("span %s has no seq: %s", c.Name, seq)
		}
	}

	tree = treeOf(recv.spans, parcels.TurnID)
	want = `invoke_agent support 
  chat scripted-support support/model/1
  chat scripted-support support/model/2
  execute_tool ask_warehouse support/tool/CALL
    invoke_agent warehouse support/tool/CALL/warehouse
      chat scripted-warehouse support/tool/CALL/warehouse/model/1
      chat scripted-warehouse support/tool/CALL/warehouse/model/2
      execute_tool lookup_order support/tool/CALL/warehouse/tool/CALL
  execute_tool ask_warehouse support/tool/CALL
    invoke_agent warehouse support/tool/CALL/warehouse
      chat scripted-warehouse support/tool/CALL/warehouse/model/1
      chat scripted-warehouse support/tool/CALL/warehouse/model/2
      execute_tool lookup_order support/tool/CALL/warehouse/tool/CALL
`
	if len(tree.children[""]) != 1 {
		t.Fatalf("the parcels turn has %d root spans", len(tree.children[""]))
	}
	if got := tree.shape(t, tree.children[""][0], 0); got != want {
		t.Fatalf("the parcels turn's spans:\n%s\nwant:\n%s", got, want)
	}
	asks := tree.children[hex.EncodeToString(tree.children[""][0].SpanId)]
	if a, b := attr(asks[2], "gen_ai.tool.call.id"), attr(asks[3], "gen_ai.tool.call.id"); a == b || a == "<none>" {
		t.Fatalf("the two ask_warehouse calls have call ids %s and %s", a, b)
	}

	tree = treeOf(recv.spans, asked.TurnID)
	roots := tree.children[""]
	sort.Slice(roots, func(i, j int) bool { return roots[i].StartTimeUnixNano < roots[j].StartTimeUnixNano })
	var shapes []string
	for _, r := range roots {
		shapes = append(shapes, attr(r, "turnlog.resumed")+" "+attr(r, "turnlog.status")+"\n"+tree.shape(t, r, 1))
	}
	want = `false suspended
  invoke_agent support 
    chat scripted-support support/model/1
|true completed
  invoke_agent support 
    chat scripted-support support/model/2
    execute_tool issue_refund support/tool/CALL
`
	if got := strings.Join(shapes, "|"); got != want {
		t.Fatalf("the approved turn's runs:\n%s\nwant (the resumed run replays model/1 and emits no span for it):\n%s", got, want)
	}
}
