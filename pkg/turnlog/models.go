package turnlog

import (
	"os"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
)

func (b builder) model(at string, c config.LLM) (fsm.Model, error) {
	const continuation = "provider-hosted continuation is refused: the log is the only session store"
	switch {
	case c.Store != nil && *c.Store:
		return nil, b.doc.ErrAt(at+".store", "store: true keeps the conversation at the provider; %s", continuation)
	case c.PreviousResponseID != "":
		return nil, b.doc.ErrAt(at+".previous_response_id", "%s", continuation)
	case c.Conversation != "":
		return nil, b.doc.ErrAt(at+".conversation", "%s", continuation)
	}
	switch c.Provider {
	case "scripted":
		m, err := scripted.New(scriptedRules(c.Rules))
		if err != nil {
			return nil, b.doc.ErrAt(at, "%v", err)
		}
		return m, nil
	case "openai":
		return b.openaiModel(at, c)
	case "":
		return nil, b.doc.ErrAt(at+".provider", "is required (scripted or openai)")
	}
	return nil, b.doc.ErrAt(at+".provider", "unknown provider %q (known: scripted, openai)", c.Provider)
}

func (b builder) openaiModel(at string, c config.LLM) (fsm.Model, error) {
	if len(c.Rules) > 0 {
		return nil, b.doc.ErrAt(at+".rules", "only the scripted provider takes rules")
	}
	switch c.API {
	case "", openai.APIChat, openai.APIResponses:
	default:
		return nil, b.doc.ErrAt(at+".api", "unknown api %q (chat or responses)", c.API)
	}
	if c.Model == "" {
		return nil, b.doc.ErrAt(at+".model", "is required")
	}
	cfg := openai.Config{API: c.API, Model: c.Model, BaseURL: c.BaseURL, Temperature: c.Temperature, Stream: c.Stream}
	if c.BaseURL != "" && !strings.HasSuffix(c.BaseURL, "/") {
		cfg.BaseURL += "/" // openai-go joins paths to the base URL as a plain prefix
	}
	if c.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(c.APIKeyEnv)
		if cfg.APIKey == "" && !b.opts.secretsOptional() { // calls no model
			return nil, b.doc.ErrAt(at+".api_key_env", "environment variable %s is empty", c.APIKeyEnv)
		}
	}
	if c.MaxRetries != nil {
		if *c.MaxRetries < 0 {
			return nil, b.doc.ErrAt(at+".max_retries", "must not be negative")
		}
		cfg.MaxRetries = *c.MaxRetries
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = -1 // openai.Config reads 0 as "the default"
		}
	}
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return nil, b.doc.ErrAt(at+".timeout", "must be a positive duration such as 60s, got %q", c.Timeout)
		}
		cfg.Timeout = d
	}
	m, err := openai.New(cfg)
	if err != nil {
		return nil, b.doc.ErrAt(at, "%v", err)
	}
	return m, nil
}

func scriptedRules(rs []config.ScriptedRule) []scripted.Rule {
	out := make([]scripted.Rule, len(rs))
	for i, r := range rs {
		out[i] = scripted.Rule{When: scripted.When(r.When), Reply: r.Reply}
		for _, c := range r.Tools {
			out[i].Tools = append(out[i].Tools, scripted.ToolCall(c))
		}
	}
	return out
}
