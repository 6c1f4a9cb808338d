package openai

import (
	"context"
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// callResponses sends the request to the Responses API, never stored at the provider.
func (m *Model) callResponses(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	params, opts, err := m.responsesParams(req)
	if err != nil {
		return fsm.ModelResponse{}, err
	}
	if !m.cfg.Stream {
		res, err := m.client.Responses.New(ctx, params, opts...)
		if err != nil {
			return fsm.ModelResponse{}, providerError(err)
		}
		return responsesAnswer(res)
	}
	s := m.client.Responses.NewStreaming(ctx, params, opts...)
	defer s.Close()
	var done *responses.Response
	for s.Next() {
		switch ev := s.Current(); ev.Type {
		case "response.output_text.delta":
			if req.OnText != nil && ev.Delta != "" {
				req.OnText(ev.Delta)
			}
		case "response.completed":
			r := ev.Response
			done = &r
		}
	}
	if err := s.Err(); err != nil {
		return fsm.ModelResponse{}, providerError(err)
	}
	if done == nil {
		return fsm.ModelResponse{}, fmt.Errorf("the stream ended before the response was complete")
	}
	return responsesAnswer(done)
}

func responsesAnswer(res *responses.Response) (fsm.ModelResponse, error) {
	if res.Status != "" && res.Status != "completed" {
		return fsm.ModelResponse{}, fmt.Errorf("the response is %s, not completed", res.Status)
	}
	out := fsm.ModelResponse{Usage: events.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
		CachedTokens: res.Usage.InputTokensDetails.CachedTokens, ReasoningTokens: res.Usage.OutputTokensDetails.ReasoningTokens}}
	out.Text = res.OutputText()
	for _, item := range res.Output {
		if item.Type != "function_call" {
			continue
		}
		args := gjson.Get(item.RawJSON(), "arguments").String()
		if args == "" {
			args = "{}"
		}
		out.ToolCalls = append(out.ToolCalls, events.ToolCall{ID: item.CallID, Name: item.Name, Arguments: json.RawMessage(args)})
	}
	return out, nil
}

// responsesParams builds a Responses request from the whole conversation: store is
// false and no previous response is named, so nothing is kept at the provider.
func (m *Model) responsesParams(req fsm.ModelRequest) (responses.ResponseNewParams, []option.RequestOption, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(m.cfg.Model), Store: oai.Bool(false)}
	if req.Instructions != "" {
		p.Instructions = oai.String(req.Instructions)
	}
	var input responses.ResponseInputParam
	for _, it := range req.Items {
		switch {
		case it.Type == events.ItemMessage && (it.Role == "user" || it.Role == "assistant" || it.Role == "system"):
			input = append(input, responses.ResponseInputItemParamOfMessage(it.Content, responses.EasyInputMessageRole(it.Role)))
		case it.Type == events.ItemFunctionCall:
			input = append(input, responses.ResponseInputItemParamOfFunctionCall(string(it.Arguments), it.CallID, it.Name))
		case it.Type == events.ItemFunctionCallOutput:
			out := responses.ResponseInputItemParamOfFunctionCallOutput(it.Output)
			out.OfFunctionCallOutput.CallID = oai.String(it.CallID) // the helper leaves call_id unset
			input = append(input, out)
		default:
			return p, nil, fmt.Errorf("conversation item %q (role %q) has no Responses form", it.Type, it.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return p, nil, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		tool := responses.ToolParamOfFunction(t.Name, schema, false)
		tool.OfFunction.Description = oai.String(t.Description)
		p.Tools = append(p.Tools, tool)
	}
	if m.cfg.Temperature != nil {
		p.Temperature = oai.Float(*m.cfg.Temperature)
	}
	set, err := parseSettings(req.Settings)
	if err != nil {
		return p, nil, err
	}
	if set.frequencyPenalty != nil || set.presence != nil {
		return p, nil, fmt.Errorf("settings.frequency_penalty and presence_penalty are not offered by the Responses API")
	}
	if set.maxTokens != nil {
		p.MaxOutputTokens = oai.Int(*set.maxTokens)
	}
	if set.topP != nil {
		p.TopP = oai.Float(*set.topP)
	}
	if set.parallelToolCalls != nil {
		p.ParallelToolCalls = oai.Bool(*set.parallelToolCalls)
	}
	if set.effort != "" {
		p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(set.effort)}
	}
	if set.verbosity != "" {
		p.Text = responses.ResponseTextConfigParam{Verbosity: responses.ResponseTextConfigVerbosity(set.verbosity)}
	}
	switch {
	case namedToolChoice(set.toolChoice):
		p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: set.toolChoice}
	case set.toolChoice != "":
		p.ToolChoice.OfToolChoiceMode = oai.Opt(responses.ToolChoiceOptions(set.toolChoice))
	}
	return p, m.requestOptions(set), nil
}
