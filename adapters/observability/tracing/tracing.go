package tracing

import (
	"context"
	"fmt"
	"net/url"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope of turnlog's spans.
const Scope = "github.com/turnlog/turnlog"

// Tracer is an fsm.Tracer on an OpenTelemetry tracer.
type Tracer struct {
	t trace.Tracer
}

var _ fsm.Tracer = (*Tracer)(nil)

// New makes spans with tp's tracer.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{t: tp.Tracer(Scope)}
}

// Start implements fsm.Tracer.
func (t *Tracer) Start(ctx context.Context, s fsm.SpanStart) (context.Context, func(fsm.SpanEnd)) {
	kind := trace.SpanKindInternal
	if s.Operation == fsm.SpanChat {
		kind = trace.SpanKindClient
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", s.Operation),
		attribute.String("gen_ai.conversation.id", s.Session),
		attribute.String("turnlog.app", s.App),
		attribute.String("turnlog.session", s.Session),
		attribute.String("turnlog.turn", s.Turn),
		attribute.String("turnlog.path", s.Path),
		attribute.Int64("turnlog.seq", s.Seq),
	}
	switch s.Operation {
	case fsm.SpanInvokeAgent:
		attrs = append(attrs, attribute.String("gen_ai.agent.name", s.Name))
		if s.Path == "" {
			attrs = append(attrs, attribute.Bool("turnlog.resumed", s.Resumed))
		}
	case fsm.SpanChat:
		attrs = append(attrs, attribute.String("gen_ai.request.model", s.Name))
	case fsm.SpanExecuteTool:
		attrs = append(attrs, attribute.String("gen_ai.tool.name", s.Name), attribute.String("gen_ai.tool.call.id", s.CallID),
			attribute.String("gen_ai.tool.type", "function"))
	}
	ctx, span := t.t.Start(ctx, s.Operation+" "+s.Name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, func(e fsm.SpanEnd) {
		if s.Operation == fsm.SpanChat {
			span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", e.Usage.InputTokens),
				attribute.Int64("gen_ai.usage.output_tokens", e.Usage.OutputTokens),
				attribute.Int64("turnlog.usage.cached_tokens", e.Usage.CachedTokens),
				attribute.Int64("turnlog.usage.reasoning_tokens", e.Usage.ReasoningTokens))
		}
		if e.Status != "" {
			span.SetAttributes(attribute.String("turnlog.status", e.Status))
		}
		if s.Operation == fsm.SpanInvokeAgent && s.Path == "" {
			span.SetAttributes(attribute.Int64("turnlog.end_seq", e.Seq))
		}
		if e.Code != "" {
			span.SetAttributes(attribute.String("error.type", string(e.Code)))
			span.SetStatus(codes.Error, string(e.Code))
		}
		span.End()
	}
}

// OTLP is a tracer provider that batches spans to an OTLP/HTTP endpoint (a URL
// such as http://collector:4318; /v1/traces is added when the URL has no path).
// Shut it down to send what is left.
func OTLP(ctx context.Context, endpoint, version string) (*sdktrace.TracerProvider, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, events.FieldError(events.CodeInvalid, "otlp-endpoint", "must be an http or https URL such as http://127.0.0.1:4318, got %q", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint %s: %w", endpoint, err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "turnlog")}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	res := resource.NewSchemaless(attrs...)
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
