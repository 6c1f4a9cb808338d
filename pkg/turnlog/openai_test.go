package turnlog_test

import (
	"strings"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

func TestExampleOpenAIConfigsLoad(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	for _, path := range []string{"../../examples/openai.yaml", "../../examples/ollama.yaml"} {
		if _, err := turnlogtest.LoadFile(t, path, turnlog.Options{Functions: demo.Functions()}); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

const openaiApp = `apps:
  a:
    start_agent: main
    llms:
      gpt:
        provider: openai
        model: gpt-test
        base_url: http://127.0.0.1:1/v1
    agents:
      main:
        llm: gpt
        settings: {max_tokens: 10}
`

func TestOpenAIConfigRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, old, new string
		wants          []string
	}{
		{"temperature per call", "{max_tokens: 10}", "{temperature: 0.7}", []string{"agent.yaml:12", "apps.a.agents.main.settings.temperature", "registered model"}},
		{"raw reasoning_effort", "{max_tokens: 10}", "{reasoning_effort: high}", []string{"settings.reasoning_effort", "reasoning: {effort"}},
		{"previous_response_id per call", "{max_tokens: 10}", "{previous_response_id: resp_1}", []string{"settings.previous_response_id", "only session store"}},
		{"store per call", "{max_tokens: 10}", "{store: true}", []string{"settings.store"}},
		{"unknown setting", "{max_tokens: 10}", "{logprobs: true}", []string{"settings.logprobs", "not a per-call setting"}},
		{"store on the model", "provider: openai", "provider: openai\n        store: true", []string{"apps.a.llms.gpt.store", "only session store"}},
		{"previous_response_id on the model", "provider: openai", "provider: openai\n        previous_response_id: resp_1", []string{"apps.a.llms.gpt.previous_response_id"}},
		{"unknown api", "provider: openai", "provider: openai\n        api: assistants", []string{"apps.a.llms.gpt.api", `"assistants"`}},
		{"no model", "model: gpt-test", "", []string{"apps.a.llms.gpt.model", "required"}},
		{"empty key env", "provider: openai", "provider: openai\n        api_key_env: TURNLOG_TEST_NO_SUCH_KEY", []string{"api_key_env", "TURNLOG_TEST_NO_SUCH_KEY"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(openaiApp, tc.old, tc.new, 1)
			_, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(src), turnlog.Options{})
			if err == nil {
				t.Fatalf("config loaded:\n%s", src)
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not mention %q", err, want)
				}
			}
		})
	}
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(openaiApp), turnlog.Options{}); err != nil {
		t.Fatal(err)
	}
}
