package turnlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
	"github.com/turnlog/turnlog/policy"
)

type noArgs struct{}

func functions() turnlog.Functions {
	return turnlog.Functions{"ping": functool.MustNew("ping", "pong", func(context.Context, noArgs) (any, error) { return "pong", nil })}
}

const valid = `apps:
  a:
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - reply: hi
    tools:
      ping: {timeout: 2s, idempotent: true, max_calls: 3}
    agents:
      main:
        llm: m
        tools: [ping]
        max_turns: 4
        settings: {max_tokens: 100}
`

func TestDemoConfigLoads(t *testing.T) {
	t.Parallel()
	apps, err := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].Name != "demo" || apps[0].Agents["support"].MaxTurns != 6 {
		t.Fatalf("apps = %+v", apps)
	}
}

func TestValidConfigCarriesToolSettings(t *testing.T) {
	t.Parallel()
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(valid), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	ag := apps[0].Agents["main"]
	spec := ag.Tools[0].Spec()
	if spec.Timeout.String() != "2s" || !spec.Idempotent || spec.MaxCalls != 3 || ag.MaxTurns != 4 || string(ag.Settings) != `{"max_tokens":100}` {
		t.Fatalf("agent = %+v, tool spec = %+v", ag, spec)
	}
}

func TestConfigErrorsNameTheEntryAndLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, old, new string
		wants          []string
	}{
		{"unknown field", "max_turns: 4", "max_turns: 4\n        colour: red", []string{"agent.yaml", "16:", "colour"}},
		{"unknown tool", "tools: [ping]", "tools: [pong]", []string{"agent.yaml:14", "apps.a.agents.main.tools[0]", `"pong"`}},
		{"unknown llm", "llm: m", "llm: gpt", []string{"agent.yaml:13", "apps.a.agents.main.llm", `"gpt"`}},
		{"bad timeout", "timeout: 2s", "timeout: soon", []string{"apps.a.tools.ping.timeout", `"soon"`}},
		{"unknown function", "ping: {timeout", "pong: {timeout", []string{"apps.a.tools.pong.function", `"pong"`, "ping"}},
		{"unknown start agent", "start_agent: main", "start_agent: boss", []string{"agent.yaml:3", "start_agent", `"boss"`}},
		{"negative max_turns", "max_turns: 4", "max_turns: -1", []string{"max_turns", "negative"}},
		{"bad rule regex", "- reply: hi", "- {when: {input: '(('}, reply: hi}", []string{"apps.a.llms.m", "rules[0].when.input"}},
		{"unknown provider", "provider: scripted", "provider: magic", []string{"provider", `"magic"`}},
		{"wrong type", "max_turns: 4", "max_turns: many", []string{"agent.yaml:15:", "max_turns", "is a string, want an integer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(valid, tc.old, tc.new, 1)
			_, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(src), turnlog.Options{Functions: functions()})
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
}

func TestGuardrailConfig(t *testing.T) {
	t.Parallel()
	good := strings.Replace(valid, "max_turns: 4", "max_turns: 4\n        guardrails:\n          input: [{name: short, kind: max_length, max: 500}, {name: judge, kind: llm_judge, llm: m, instructions: 'Say PASS', pass_if: '^PASS'}]\n          output: [{name: no-keys, kind: regex, pattern: 'sk-[A-Za-z0-9]{20,}'}]", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	if ag := apps[0].Agents["main"]; len(ag.InputGuardrails) != 2 || len(ag.OutputGuardrails) != 1 || ag.InputGuardrails[1].Model == nil {
		t.Fatalf("guardrails = %+v", ag)
	}
	refused(t, func(bad string) string {
		return strings.Replace(valid, "max_turns: 4", "max_turns: 4\n        guardrails:\n          input: "+bad, 1)
	}, map[string]string{
		"[{kind: max_length, max: 5}]":                                               "guardrails.input[0].name",
		"[{name: a, kind: magic}]":                                                   "guardrails.input[0].kind",
		"[{name: a, kind: regex, pattern: '(('}]":                                    "guardrails.input[0].pattern",
		"[{name: a, kind: max_length}]":                                              "guardrails.input[0].max: is required with kind: max_length",
		"[{name: a, kind: max_length, max: 1}, {name: a, kind: max_length, max: 2}]": "guardrails.input[1].name",
		"[{name: j, kind: llm_judge, llm: nope, instructions: x, pass_if: PASS}]":    "guardrails.input[0].llm",
		"[{name: j, kind: llm_judge, llm: m, pass_if: PASS}]":                        "guardrails.input[0].instructions",
		"[{name: j, kind: llm_judge, llm: m, instructions: x}]":                      "guardrails.input[0].pass_if: is required with kind: llm_judge",
		"[{name: a, kind: regex}]":                                                   "guardrails.input[0].pattern: is required with kind: regex",
	})
}

func TestGuardrailPolicyConfig(t *testing.T) {
	t.Parallel()
	good := valid + "guardrail_policy:\n  - {name: keys, action: redact, pattern: 'sk-[a-z0-9]{16,}'}\n  - {name: promises, action: review, pattern: voucher}\n  - {name: cards, action: block, pattern: '\\d{16}', applies_to: [model_input]}\n"
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	p := apps[0].GuardrailPolicy
	if p == nil || len(p.Rules) != 3 || p.Rules[0].Replacement != "[REDACTED:keys]" || len(p.Rules[0].Targets) != 4 ||
		strings.Join(p.Rules[1].Targets, ",") != "model_output,tool_input" || strings.Join(p.Rules[2].Targets, ",") != "model_input" {
		t.Fatalf("policy = %+v", p)
	}
	refused(t, func(bad string) string { return valid + "guardrail_policy: " + bad + "\n" }, map[string]string{
		"[{action: log, pattern: x}]": "guardrail_policy[0].name",
		"[{name: a, action: log, pattern: x}, {name: a, action: log, pattern: y}]": "guardrail_policy[1].name",
		"[{name: a, action: hide, pattern: x}]":                                    "guardrail_policy[0].action",
		"[{name: a, action: log, pattern: '(('}]":                                  "guardrail_policy[0].pattern",
		"[{name: a, action: log}]":                                                 "guardrail_policy[0].pattern",
		"[{name: a, action: log, pattern: x, applies_to: [model]}]":                "guardrail_policy[0].applies_to[0]",
		"[{name: a, action: review, pattern: x, applies_to: [tool_output]}]":       "guardrail_policy[0].applies_to[0]",
		"[{name: a, action: block, pattern: x, replacement: y}]":                   "guardrail_policy[0].replacement",
		"[{name: a, action: redact, pattern: R, replacement: R}]":                  "replacement",
		"[{name: a, action: log, pattern: x, mode: strict}]":                       "mode",
	})
}

const twoAgents = `apps:
  a:
    start_agent: triage
    llms:
      m: {provider: scripted, rules: [{reply: hi}]}
    tools:
      ping: {}
    agents:
      triage:
        llm: m
        tools: [ping]
        handoffs: HANDOFFS
      billing:
        llm: m
        handoffs: [triage]
`

func TestHandoffConfig(t *testing.T) {
	t.Parallel()
	good := strings.Replace(twoAgents, "HANDOFFS", "[billing, {agent: billing, tool: escalate, description: 'For invoices'}]", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	hs := apps[0].Agents["triage"].Handoffs
	if len(hs) != 2 || hs[0].Tool != "transfer_to_billing" || hs[1].Tool != "escalate" || hs[1].Description != "For invoices" {
		t.Fatalf("handoffs = %+v", hs)
	}
	refused(t, func(bad string) string { return strings.Replace(twoAgents, "HANDOFFS", bad, 1) }, map[string]string{
		"[nobody]":                         "apps.a.agents.triage.handoffs[0]: names no agent of app a",
		"[{agent: billing, tool: ping}]":   "apps.a.agents.triage.handoffs[0]: the handoff to billing and tool ping both use the tool name ping",
		"[billing, {agent: billing}]":      "apps.a.agents.triage.handoffs[1]: the handoff to billing and handoffs[0] (to billing)",
		"[{tool: x}]":                      "handoffs[0].agent: is required",
		"[{agent: billing, colour: blue}]": "colour",
	})
	dup := strings.Replace(strings.Replace(twoAgents, "HANDOFFS", "[billing]", 1), "      billing:\n", "      triage:\n", 1)
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(dup), turnlog.Options{Functions: functions()}); err == nil || !strings.Contains(err.Error(), `mapping key "triage" already defined`) {
		t.Fatalf("two agents named triage: err = %v", err)
	}
}

// refused loads each bad entry placed into a config by build and wants an error that
// mentions the given text.
func refused(t *testing.T, build func(bad string) string, cases map[string]string) {
	t.Helper()
	for bad, want := range cases {
		if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(build(bad)), turnlog.Options{Functions: functions()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err = %v, want it to mention %s", bad, err, want)
		}
	}
}

func TestAgentToolConfig(t *testing.T) {
	t.Parallel()
	src := strings.Replace(twoAgents, "HANDOFFS", "[]", 1)
	good := strings.Replace(src, "tools: [ping]", "tools: [ping, {agent: billing, name: ask_billing, description: 'Billing facts', needs_approval: true, expires_in: 10m}]", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	ats := apps[0].Agents["triage"].AgentTools
	if len(ats) != 1 || ats[0].Agent != "billing" || ats[0].Name != "ask_billing" || !ats[0].NeedsApproval || ats[0].ExpiresIn != 10*time.Minute || len(apps[0].Agents["triage"].Tools) != 1 {
		t.Fatalf("agent tools = %+v", ats)
	}
	refused(t, func(bad string) string { return strings.Replace(src, "tools: [ping]", "tools: "+bad, 1) }, map[string]string{
		"[ping, {agent: nobody}]":                                    "apps.a.agents.triage.tools[1]: names no agent of app a",
		"[ping, {agent: billing, name: ping}]":                       "apps.a.agents.triage.tools[1]: the agent tool billing and tool ping both use the name ping",
		"[{name: x}]":                                                "apps.a.agents.triage.tools[0].agent: is required",
		"[{agent: billing, expires_in: 5m}]":                         "apps.a.agents.triage.tools[0].expires_in",
		"[{agent: billing, needs_approval: true, expires_in: soon}]": "apps.a.agents.triage.tools[0].expires_in",
		"[{agent: billing, colour: red}]":                            "colour",
	})
}

func TestAccessPolicyConfig(t *testing.T) {
	t.Parallel()
	at := "    agents:\n"
	good := strings.Replace(valid, at, "    policy:\n      mode: network-off\n      rules:\n        - {name: no-push, decision: deny, commands: ['git push'], alternative: ask}\n        - {name: src, decision: allow, actions: [write], paths: ['src/**'], max_level: L2}\n"+at, 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	if e := apps[0].ToolPolicy; e == nil || e.Mode != "network-off" || len(e.Rules) != 2 || *e.Rules[1].MaxLevel != 2 {
		t.Fatalf("access = %+v", e)
	}
	refused(t, func(bad string) string {
		return strings.Replace(valid, at, "    policy:\n      "+bad+"\n"+at, 1)
	}, map[string]string{
		"mode: open":                                                     "apps.a.policy.mode",
		"sandbox: chroot":                                                "apps.a.policy.sandbox: unknown value \"chroot\" (one of landlock, bubblewrap)",
		"rules: [{decision: deny}]":                                      "apps.a.policy.rules[0].name",
		"rules: [{name: a, decision: maybe}]":                            "apps.a.policy.rules[0].decision",
		"rules: [{name: a, decision: deny, actions: [fly]}]":             "apps.a.policy.rules[0].actions[0]",
		"rules: [{name: a, decision: deny, max_level: L9}]":              "apps.a.policy.rules[0].max_level",
		"rules: [{name: a, decision: deny, paths: ['[']}]":               "not a valid glob",
		"rules: [{name: a, decision: deny}, {name: a, decision: allow}]": "apps.a.policy.rules[1].name",
		"git: push":                                 "apps.a.policy.git: unknown value \"push\" (one of read-only, write)",
		"network: wifi":                             "apps.a.policy.network: unknown value \"wifi\" (one of off, allowlist, host)",
		"{mode: read-only, network: host}":          "apps.a.policy.network: mode read-only has no network",
		"{mode: full-isolated, network: allowlist}": "apps.a.policy.network: mode full-isolated has no network",
		"{mode: network-allowlist, network: host}":  "apps.a.policy.network: mode network-allowlist goes through the proxy",
		"undo: {turn_bytes: -5}":                    "apps.a.policy.undo.turn_bytes: must be at least -1, got -5",
		"undo: {exclude: ['ok/**', '[']}":           "apps.a.policy.undo.exclude[1]",
		"undo: {files: 3}":                          "files",
	})
}

// TestNetworkIsItsOwnAxis: commands get no network unless the config asks — mode
// workspace-write included —, the proxy with allowlist (network-allowlist's default),
// the machine's only with network: host.
func TestNetworkIsItsOwnAxis(t *testing.T) {
	t.Parallel()
	at := "    agents:\n"
	for policyYAML, want := range map[string]policy.Network{
		"{}":                        policy.NetworkOff,
		"{mode: workspace-write}":   policy.NetworkOff,
		"{mode: network-allowlist}": policy.NetworkAllowlist,
		"{network: allowlist}":      policy.NetworkAllowlist,
		"{network: host}":           policy.NetworkHost,
		"{mode: read-only}":         policy.NetworkOff,
		"{mode: network-off}":       policy.NetworkOff,
	} {
		yaml := strings.Replace(valid, at, "    policy: "+policyYAML+"\n"+at, 1)
		apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(yaml), turnlog.Options{Functions: functions()})
		if err != nil {
			t.Fatalf("%s: %v", policyYAML, err)
		}
		if got := apps[0].ToolPolicy.EffectiveNetwork(); got != want {
			t.Errorf("%s: network %s, want %s", policyYAML, got, want)
		}
	}
}
