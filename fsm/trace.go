package fsm

import (
	"context"

	"github.com/turnlog/turnlog/events"
)

// Span operations, as the OpenTelemetry GenAI conventions name them.
const (
	SpanInvokeAgent = "invoke_agent" // a turn's run, or a nested agent's
	SpanChat        = "chat"         // a live model call
	SpanExecuteTool = "execute_tool" // a live tool call (an agent tool's too)
)

// Tracer hears the live work of turns as nested spans (traces). The engine starts a
// span where work begins and ends it where the work ends; a child's ctx is the one
// its parent's Start returned. What a turn replays from its recording is not work
// and starts no span. Start must be cheap and must not block.
type Tracer interface {
	Start(ctx context.Context, s SpanStart) (context.Context, func(SpanEnd))
}

// SpanStart says what a span is of.
type SpanStart struct {
	Operation          string // SpanInvokeAgent, SpanChat or SpanExecuteTool
	Name               string // the agent, the llm id, the tool
	App, Session, Turn string
	Path               string // the activity's path in the turn ("" for the turn's own run)
	CallID             string // a tool call's id
	// Seq is the session's last seq when the work began: its events come after it.
	Seq int64
	// Resumed marks a turn's run that goes on from its recording (an answer, a
	// restart's recovery) rather than from its input.
	Resumed bool
}

// SpanEnd says how the work ended: codes and counts, never a message (a failure's
// words may quote content, and a trace cannot be erased).
type SpanEnd struct {
	Status string       // a run's: StatusCompleted, StatusFailed, StatusCanceled, StatusSuspended, or "broken"
	Code   events.Code  // why it failed ("" when it did not)
	Usage  events.Usage // a model call's tokens
	Seq    int64        // a turn's last seq when its run ended
}

type noTracer struct{}

func (noTracer) Start(ctx context.Context, _ SpanStart) (context.Context, func(SpanEnd)) {
	return ctx, func(SpanEnd) {}
}

// traceRun starts the span of a turn's run; ended ends it.
func (r *run) traceRun(resumed bool) {
	ctx, end := r.e.opts.Tracer.Start(r.ctx, SpanStart{Operation: SpanInvokeAgent, Name: r.agent.Name, App: r.appName(),
		Session: r.session, Turn: r.turn, Seq: r.log.last(), Resumed: resumed})
	r.ctx, r.endSpan = ctx, end
}

// traced starts a span of work under the run's.
func (r *run) traced(ctx context.Context, s SpanStart) (context.Context, func(SpanEnd)) {
	s.App, s.Session, s.Turn, s.Seq = r.appName(), r.session, r.turn, r.log.last()
	return r.e.opts.Tracer.Start(ctx, s)
}

func (r *run) appName() string {
	if r.app == nil {
		return ""
	}
	return r.app.Name
}

func modelSpanEnd(u events.Usage, err error) SpanEnd {
	if err != nil {
		return SpanEnd{Code: events.CodeModelFailed, Usage: u}
	}
	return SpanEnd{Usage: u}
}

func toolSpanEnd(tr *events.ToolResulted) SpanEnd {
	if !tr.IsError {
		return SpanEnd{}
	}
	kind := tr.ErrorKind
	if kind == "" {
		kind = ToolErrFailed
	}
	return SpanEnd{Code: events.Code(kind)}
}

// nestedSpanEnd is how an agent tool's run ended: answered, failed, or waiting for
// people (the turn suspends; the nested run goes on in the resumed run's span).
func nestedSpanEnd(stop *nestedStop) SpanEnd {
	switch {
	case stop == nil:
		return SpanEnd{Status: StatusCompleted}
	case stop.failure != nil:
		return SpanEnd{Status: StatusFailed, Code: stop.failure.Code}
	default:
		return SpanEnd{Status: StatusSuspended}
	}
}
