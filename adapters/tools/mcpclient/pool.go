package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// Separator joins a server's name and its tool's: `everything__echo`.
const Separator = "__"

// DefaultTimeout bounds connecting, listing and each call when a server sets none.
const DefaultTimeout = 30 * time.Second

// Server is one MCP server to use.
type Server struct {
	Name string
	// URL is a streamable HTTP endpoint; Command (argv) a program speaking on stdio,
	// run in the sandbox Sandbox describes (its workspace is the program's folder).
	URL          string
	Command      []string
	Sandbox      sandbox.Spec
	AllowedTools []string // empty: every tool the server has
	BearerToken  string   // sent as Authorization: Bearer on every HTTP request
	Timeout      time.Duration
	HTTPClient   *http.Client // tests
}

// Pool holds the sessions of the servers an app connected to; Close ends them.
type Pool struct {
	mu       sync.Mutex
	sessions []*mcp.ClientSession
}

// Close ends every session (stdio servers are stopped).
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, s := range p.sessions {
		errs = append(errs, s.Close())
	}
	p.sessions = nil
	return errors.Join(errs...)
}

// Connect reaches a server, lists its tools and returns the allowed ones as turnlog
// tools. Errors name the server and say what failed.
func (p *Pool) Connect(ctx context.Context, s Server) ([]fsm.Tool, error) {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	var transport mcp.Transport
	switch {
	case s.URL != "" && len(s.Command) > 0:
		return nil, fmt.Errorf("mcp server %s: give a url or a command, not both", s.Name)
	case s.URL != "":
		client := s.HTTPClient
		if client == nil {
			client = &http.Client{}
		}
		if s.BearerToken != "" {
			c := *client
			c.Transport = bearer{token: s.BearerToken, next: transportOf(client)}
			client = &c
		}
		transport = &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: client, MaxRetries: -1}
	case len(s.Command) > 0:
		srv, err := sandbox.NewServer(s.Sandbox, s.Command)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", s.Name, err)
		}
		transport = stdioTransport{srv: srv, ctx: context.WithoutCancel(ctx)}
	default:
		return nil, fmt.Errorf("mcp server %s: give a url (streamable HTTP) or a command (stdio)", s.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "turnlog", Version: "1"}, nil)
	session, err := client.Connect(cctx, exactTransport{transport}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s is unreachable (%s): %w", s.Name, s.where(), err)
	}
	tools, err := discover(cctx, session, s)
	if err != nil {
		session.Close()
		return nil, err
	}
	p.mu.Lock()
	p.sessions = append(p.sessions, session)
	p.mu.Unlock()
	return tools, nil
}

func (s Server) where() string {
	if s.URL != "" {
		return s.URL
	}
	return strings.Join(s.Command, " ")
}

func discover(ctx context.Context, session *mcp.ClientSession, s Server) ([]fsm.Tool, error) {
	found := map[string]*mcp.Tool{}
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: list tools: %w", s.Name, err)
		}
		found[t.Name] = t
	}
	names := s.AllowedTools
	if len(names) == 0 {
		for n := range found {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var out []fsm.Tool
	for _, n := range names {
		t, ok := found[n]
		if !ok {
			have := make([]string, 0, len(found))
			for h := range found {
				have = append(have, h)
			}
			slices.Sort(have)
			return nil, fmt.Errorf("mcp server %s has no tool %q (allowed_tools); it has %s", s.Name, n, strings.Join(have, ", "))
		}
		tool, err := newTool(session, s, t)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
