package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// The APIs a model can be called through.
const (
	APIChat      = "chat"
	APIResponses = "responses"
)

// Config registers one model.
type Config struct {
	API         string   // APIChat (default) or APIResponses
	Model       string   // the provider's model name
	BaseURL     string   // e.g. https://api.openai.com/v1/ or http://127.0.0.1:11434/v1/
	APIKey      string   // read by the caller from the env var the config names
	Temperature *float64 // a provider setting: the same for every call
	Stream      bool     // stream the answer (server-sent chunks)
	MaxRetries  int      // transient failures (429, 5xx, connection) retried with backoff; default 2
	Timeout     time.Duration
	HTTPClient  *http.Client // tests and proxies
}

// Model calls Chat Completions or Responses.
type Model struct {
	cfg    Config
	client oai.Client
}

var _ fsm.Model = (*Model)(nil)

// New builds a Chat Completions model.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, fmt.Errorf("model is required")
	}
	switch cfg.API {
	case "":
		cfg.API = APIChat
	case APIChat, APIResponses:
	default:
		return nil, fmt.Errorf("unknown api %q (chat or responses)", cfg.API)
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 2
	}
	return &Model{cfg: cfg, client: oai.NewClient(clientOptions(cfg)...)}, nil
}

// clientOptions are a client's retries, endpoint, key and HTTP client from cfg.
func clientOptions(cfg Config) []option.RequestOption {
	opts := []option.RequestOption{option.WithMaxRetries(max(cfg.MaxRetries, 0))}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return opts
}

// Call sends the whole request and returns the answer. Provider errors come back as
// errors (the engine fails the turn with model_failed, quoting the message).
func (m *Model) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	if m.cfg.API == APIResponses {
		return m.callResponses(ctx, req)
	}
	params, opts, err := m.params(req)
	if err != nil {
		return fsm.ModelResponse{}, err
	}
	if m.cfg.Stream {
		return m.stream(ctx, params, opts, req.OnText)
	}
	res, err := m.client.Chat.Completions.New(ctx, params, opts...)
	if err != nil {
		return fsm.ModelResponse{}, providerError(err)
	}
	if len(res.Choices) == 0 {
		return fsm.ModelResponse{}, fmt.Errorf("the provider answered with no choices")
	}
	return responseOf(res.Choices[0].Message, res.Usage)
}

func (m *Model) stream(ctx context.Context, params oai.ChatCompletionNewParams, opts []option.RequestOption, onText func(string)) (fsm.ModelResponse, error) {
	params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	s := m.client.Chat.Completions.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var acc oai.ChatCompletionAccumulator
	for s.Next() {
		chunk := s.Current()
		acc.AddChunk(chunk)
		if onText != nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			onText(chunk.Choices[0].Delta.Content)
		}
	}
	if err := s.Err(); err != nil {
		return fsm.ModelResponse{}, providerError(err)
	}
	if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
		return fsm.ModelResponse{}, fmt.Errorf("the stream ended before the response was complete")
	}
	return responseOf(acc.Choices[0].Message, acc.Usage)
}

func providerError(err error) error {
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return fmt.Errorf("provider answered %d: %s", apiErr.StatusCode, msg)
	}
	return err
}

func responseOf(msg oai.ChatCompletionMessage, usage oai.CompletionUsage) (fsm.ModelResponse, error) {
	out := fsm.ModelResponse{Usage: events.Usage{InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens,
		CachedTokens: usage.PromptTokensDetails.CachedTokens, ReasoningTokens: usage.CompletionTokensDetails.ReasoningTokens}}
	out.Text = msg.Content
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return out, fmt.Errorf("the provider asked for a %s tool call, which turnlog does not offer", tc.Type)
		}
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(args)})
	}
	return out, nil
}

// params builds the Chat Completions request: the instructions as the system message,
// then every conversation item, the tools, and the allowed per-call settings.
func (m *Model) params(req fsm.ModelRequest) (oai.ChatCompletionNewParams, []option.RequestOption, error) {
	// store: false, always: the log is the only session store.
	p := oai.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model), Store: oai.Bool(false)}
	if req.Instructions != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.Instructions))
	}
	var pending *oai.ChatCompletionAssistantMessageParam // an assistant turn gathering its tool calls
	flush := func() {
		if pending != nil {
			p.Messages = append(p.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: pending})
			pending = nil
		}
	}
	for _, it := range req.Items {
		switch {
		case it.Type == events.ItemMessage && it.Role == "assistant":
			flush()
			pending = &oai.ChatCompletionAssistantMessageParam{}
			pending.Content.OfString = oai.String(it.Content)
		case it.Type == events.ItemFunctionCall:
			if pending == nil {
				pending = &oai.ChatCompletionAssistantMessageParam{}
			}
			pending.ToolCalls = append(pending.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{ID: it.CallID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: it.Name, Arguments: string(it.Arguments)}}})
		case it.Type == events.ItemFunctionCallOutput:
			flush()
			p.Messages = append(p.Messages, oai.ToolMessage(it.Output, it.CallID))
		case it.Type == events.ItemMessage && it.Role == "user":
			flush()
			p.Messages = append(p.Messages, oai.UserMessage(it.Content))
		case it.Type == events.ItemMessage && it.Role == "system":
			flush()
			p.Messages = append(p.Messages, oai.SystemMessage(it.Content))
		default:
			return p, nil, fmt.Errorf("conversation item %q (role %q) has no Chat Completions form", it.Type, it.Role)
		}
	}
	flush()
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return p, nil, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: oai.String(t.Description), Parameters: shared.FunctionParameters(schema)}))
	}
	if m.cfg.Temperature != nil {
		p.Temperature = oai.Float(*m.cfg.Temperature)
	}
	set, err := parseSettings(req.Settings)
	if err != nil {
		return p, nil, err
	}
	if set.maxTokens != nil {
		p.MaxCompletionTokens = oai.Int(*set.maxTokens)
	}
	if set.topP != nil {
		p.TopP = oai.Float(*set.topP)
	}
	if set.frequencyPenalty != nil {
		p.FrequencyPenalty = oai.Float(*set.frequencyPenalty)
	}
	if set.presence != nil {
		p.PresencePenalty = oai.Float(*set.presence)
	}
	if set.parallelToolCalls != nil {
		p.ParallelToolCalls = oai.Bool(*set.parallelToolCalls)
	}
	if set.effort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(set.effort)
	}
	if set.verbosity != "" {
		p.Verbosity = oai.ChatCompletionNewParamsVerbosity(set.verbosity)
	}
	switch {
	case namedToolChoice(set.toolChoice):
		p.ToolChoice.OfFunctionToolChoice = &oai.ChatCompletionNamedToolChoiceParam{
			Function: oai.ChatCompletionNamedToolChoiceFunctionParam{Name: set.toolChoice}}
	case set.toolChoice != "":
		p.ToolChoice.OfAuto = oai.String(set.toolChoice)
	}
	return p, m.requestOptions(set), nil
}
