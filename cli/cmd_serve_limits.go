package cli

import (
	"flag"
	"regexp"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/sandbox"
)

// requestLimits are serve's bounds on what one request may send and what its
// clients may hold.
type requestLimits struct {
	body  string
	json  events.Limits
	conns turnlog.ConnLimits
}

// requestLimitFlags registers the request limits' flags on fs, with turnlog's
// defaults (docs/api.md, "Limits").
func requestLimitFlags(fs *flag.FlagSet) *requestLimits {
	l := &requestLimits{json: events.DefaultLimits}
	fs.StringVar(&l.body, "max-body", "1M", "the largest request body, in bytes or with K, M or G (a larger one is 413 too_large)")
	fs.IntVar(&l.json.Depth, "max-json-depth", l.json.Depth, "how deeply a request's JSON may nest objects and arrays")
	fs.IntVar(&l.json.Keys, "max-json-keys", l.json.Keys, "how many members one object of a request's JSON may have")
	fs.IntVar(&l.json.String, "max-json-string", l.json.String, "how many bytes one string of a request's JSON may take")
	fs.IntVar(&l.json.Array, "max-json-array", l.json.Array, "how many elements one array of a request's JSON may have")
	d := turnlog.DefaultConnLimits
	l.conns = d
	l.conns.Total = 0
	fs.IntVar(&l.conns.Total, "max-connections", 0, "how many HTTP connections may be open at once (0: as many as the descriptor limit leaves room for, at most 8192); past it, 503 overloaded")
	fs.IntVar(&l.conns.PerAddress, "max-connections-per-address", d.PerAddress, "how many of them one client address may hold (0: no cap, for a server behind a proxy)")
	fs.DurationVar(&l.conns.HeaderTimeout, "header-timeout", d.HeaderTimeout, "how long a request's head may take to arrive")
	fs.DurationVar(&l.conns.BodyTimeout, "body-timeout", d.BodyTimeout, "how long a request's body may take to arrive (past it, 408)")
	fs.DurationVar(&l.conns.IdleTimeout, "idle-timeout", d.IdleTimeout, "how long a kept-alive connection may wait for its next request")
	fs.DurationVar(&l.conns.WriteTimeout, "write-timeout", d.WriteTimeout, "how long one write of an answer may wait for a client that does not read (streams live as long as they write)")
	return l
}

var bodySize = regexp.MustCompile(`^[1-9][0-9]{0,12}[KMG]?$`)

// check refuses limits turnlog cannot serve with, naming the flag.
func (l *requestLimits) check() error {
	if !bodySize.MatchString(l.body) {
		return events.FieldError(events.CodeInvalid, "max-body", "must be a size such as 1M, 512K or 1048576, got %q", l.body)
	}
	if l.json.Depth < 2 || l.json.Depth > events.StoreLimits.Depth {
		return events.FieldError(events.CodeInvalid, "max-json-depth", "must be from 2 to %d (what every store can keep), got %d", events.StoreLimits.Depth, l.json.Depth)
	}
	for name, v := range map[string]int{"max-json-keys": l.json.Keys, "max-json-string": l.json.String, "max-json-array": l.json.Array} {
		if v < 1 {
			return events.FieldError(events.CodeInvalid, name, "must be at least 1, got %d", v)
		}
	}
	if l.conns.Total < 0 || l.conns.PerAddress < 0 {
		return events.FieldError(events.CodeInvalid, "max-connections", "must be a number of connections, not negative")
	}
	if l.conns.Total == 0 {
		l.conns.Total = min(turnlog.DefaultConnLimits.Total, sandbox.HTTPConnsThatFit()-turnlog.ConnLimits{}.Descriptors())
		if l.conns.Total < minConns {
			l.conns.Total = minConns // and the descriptor check says what to raise
		}
	}
	for name, v := range map[string]time.Duration{"header-timeout": l.conns.HeaderTimeout, "body-timeout": l.conns.BodyTimeout,
		"idle-timeout": l.conns.IdleTimeout, "write-timeout": l.conns.WriteTimeout} {
		if v <= 0 {
			return events.FieldError(events.CodeInvalid, name, "must be a positive duration such as 10s, got %s", v)
		}
	}
	return nil
}

// minConns is the fewest HTTP connections serve starts with.
const minConns = 64
