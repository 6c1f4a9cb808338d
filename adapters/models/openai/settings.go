package openai

import (
	"fmt"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// allowedSetting gives the JSON kind of each setting an agent may pass per call: they
// are safe to replay because they do not depend on state kept at the provider.
func allowedSetting(name string) (string, bool) {
	switch name {
	case "max_tokens", "top_p", "frequency_penalty", "presence_penalty":
		return "number", true
	case "timeout", "verbosity", "tool_choice":
		return "string", true
	case "parallel_tool_calls":
		return "boolean", true
	case "reasoning":
		return "object", true
	}
	return "", false
}

// refusedSetting explains why a setting cannot be a per-call setting.
func refusedSetting(name string) (string, bool) {
	switch name {
	case "temperature", "seed":
		return "is a provider setting: set it on the registered model (llms.<id>." + name + ")", true
	case "previous_response_id", "conversation":
		return "is provider-hosted continuation: the log is the only session store", true
	case "store":
		return "would keep the conversation at the provider: the log is the only session store", true
	case "reasoning_effort":
		return "is not accepted raw: use reasoning: {effort: ...}", true
	}
	return "", false
}

// CheckSettings validates an agent's per-call settings (canonical JSON) and names the
// first one that is refused or malformed.
func CheckSettings(settings []byte) error {
	var err error
	gjson.ParseBytes(settings).ForEach(func(k, v gjson.Result) bool {
		if why, ok := refusedSetting(k.Str); ok {
			err = fmt.Errorf("settings.%s %s", k.Str, why)
			return false
		}
		want, ok := allowedSetting(k.Str)
		if !ok {
			err = fmt.Errorf("settings.%s is not a per-call setting (allowed: max_tokens, top_p, frequency_penalty, presence_penalty, timeout, parallel_tool_calls, reasoning, verbosity, tool_choice)", k.Str)
			return false
		}
		if got := kind(v); got != want {
			err = fmt.Errorf("settings.%s must be a %s, got %s", k.Str, want, got)
			return false
		}
		if k.Str == "reasoning" {
			v.ForEach(func(rk, rv gjson.Result) bool {
				if rk.Str != "effort" || rv.Type != gjson.String {
					err = fmt.Errorf("settings.reasoning.%s is not allowed: only effort (a string)", rk.Str)
					return false
				}
				return true
			})
		}
		return err == nil
	})
	return err
}

func kind(v gjson.Result) string {
	switch {
	case v.Type == gjson.Number:
		return "number"
	case v.Type == gjson.String:
		return "string"
	case v.Type == gjson.True || v.Type == gjson.False:
		return "boolean"
	case v.IsObject():
		return "object"
	case v.IsArray():
		return "array"
	}
	return "null"
}

// callSettings are an agent's per-call settings, parsed once for either API.
type callSettings struct {
	maxTokens                        *int64
	topP, frequencyPenalty, presence *float64
	parallelToolCalls                *bool
	effort, verbosity, toolChoice    string
	timeout                          time.Duration
}

func parseSettings(raw []byte) (callSettings, error) {
	var s callSettings
	if err := CheckSettings(raw); err != nil {
		return s, err
	}
	var err error
	num := func(v gjson.Result) *float64 { f := v.Float(); return &f }
	gjson.ParseBytes(raw).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "max_tokens":
			n := v.Int()
			s.maxTokens = &n
		case "top_p":
			s.topP = num(v)
		case "frequency_penalty":
			s.frequencyPenalty = num(v)
		case "presence_penalty":
			s.presence = num(v)
		case "parallel_tool_calls":
			b := v.Bool()
			s.parallelToolCalls = &b
		case "reasoning":
			s.effort = v.Get("effort").Str
		case "verbosity":
			s.verbosity = v.Str
		case "tool_choice":
			s.toolChoice = v.Str
		case "timeout":
			if s.timeout, err = time.ParseDuration(v.Str); err != nil {
				err = fmt.Errorf("settings.timeout: %w", err)
				return false
			}
		}
		return true
	})
	return s, err
}

// requestOptions are the per-request options: the model's timeout, or the call's.
func (m *Model) requestOptions(s callSettings) []option.RequestOption {
	switch {
	case s.timeout > 0:
		return []option.RequestOption{option.WithRequestTimeout(s.timeout)}
	case m.cfg.Timeout > 0:
		return []option.RequestOption{option.WithRequestTimeout(m.cfg.Timeout)}
	}
	return nil
}

// namedToolChoice reports whether a tool_choice names a tool rather than a mode.
func namedToolChoice(choice string) bool {
	return choice != "" && choice != "auto" && choice != "none" && choice != "required"
}
