package openai

import (
	"fmt"

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
