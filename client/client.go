package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls one turnlog server.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client of the server at baseURL (such as http://127.0.0.1:8080) that
// sends key as its bearer API key ("" for a --dev server). httpClient nil is
// http.DefaultClient.
func New(baseURL, key string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: key, http: httpClient}
}

// BaseURL is the server's URL the client calls.
func (c *Client) BaseURL() string { return c.base }

// Error is an answer that is not a success: the HTTP status and the API's typed
// error (code and message; the message names the field at fault).
type Error struct {
	Status  int
	Code    string
	Message string
	// Conflicts name each path of a revert_conflict.
	Conflicts []RevertConflict
}

func (e *Error) Error() string { return fmt.Sprintf("turnlog: %d %s: %s", e.Status, e.Code, e.Message) }

// Option changes one request: IdempotencyKey, LastEventID, Header.
type Option func(*http.Request)

// IdempotencyKey makes a write safe to repeat: the same key and body give the same
// result, never a second turn.
func IdempotencyKey(key string) Option {
	return func(r *http.Request) { r.Header.Set("Idempotency-Key", key) }
}

// LastEventID has a turn request or stream continue after that event id.
func LastEventID(id string) Option {
	return func(r *http.Request) { r.Header.Set("Last-Event-ID", id) }
}

// Header sets any header.
func Header(name, value string) Option {
	return func(r *http.Request) { r.Header.Set(name, value) }
}

// request builds a request to path (query already in it) with body as JSON.
func (c *Client) request(ctx context.Context, method, path string, body any, opts []Option) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for _, o := range opts {
		o(req)
	}
	return req, nil
}

// send makes a request and returns the answer when its status is 2xx; otherwise the
// API's error.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		return res, nil
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	e := &Error{Status: res.StatusCode}
	var body struct {
		Error struct {
			Code, Message string
			Conflicts     []RevertConflict `json:"conflicts"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Conflicts = body.Error.Code, body.Error.Message, body.Error.Conflicts
	} else {
		e.Code, e.Message = http.StatusText(res.StatusCode), strings.TrimSpace(string(raw))
	}
	return nil, e
}

// call sends a request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any, opts []Option) (int, error) {
	req, err := c.request(ctx, method, path, body, opts)
	if err != nil {
		return 0, err
	}
	res, err := c.send(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if out == nil {
		return res.StatusCode, nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return res.StatusCode, fmt.Errorf("turnlog: %s %s: the answer is not the documented JSON: %w", method, path, err)
	}
	return res.StatusCode, nil
}

// raw sends a request and returns its body as it is.
func (c *Client) raw(ctx context.Context, path string) ([]byte, error) {
	req, err := c.request(ctx, http.MethodGet, path, nil, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}

func sessionPath(id string, rest ...string) string {
	p := "/v1/sessions/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}
