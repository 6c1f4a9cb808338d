package main

import (
	"flag"
	"regexp"

	"github.com/turnlog/turnlog/events"
)

// requestLimits are serve's bounds on what one request may send.
type requestLimits struct {
	body string
	json events.Limits
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
	return nil
}
