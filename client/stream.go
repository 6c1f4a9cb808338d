package client

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// StreamEvent is one server-sent event: its name (turn_started, text_delta,
// tool_call, …; on an events stream, the event type), its id (a log seq; "" for a
// live text piece) and its data.
type StreamEvent struct {
	Name string
	ID   string
	Data json.RawMessage
}

// Decode reads the event's data into v.
func (e StreamEvent) Decode(v any) error { return json.Unmarshal(e.Data, v) }

// Accepted is what StreamTurn returns instead of a stream when the input was queued
// behind a busy session's turn (on_busy: enqueue): TurnID, Status queued, Location,
// Position. Follow the turn with FollowTurn once it runs.
type Accepted struct{ TurnResult }

func (a *Accepted) Error() string {
	return "turnlog: the input was queued as turn " + a.TurnID + " (follow it with FollowTurn)"
}

// Stream reads an SSE answer.
type Stream struct {
	body   io.ReadCloser
	sc     *bufio.Scanner
	lastID string
}

func (c *Client) stream(req *http.Request) (*Stream, error) {
	res, err := c.send(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusAccepted { // queued (on_busy: enqueue): there is no stream yet
		defer res.Body.Close()
		var acc Accepted
		if err := json.NewDecoder(res.Body).Decode(&acc.TurnResult); err != nil {
			return nil, err
		}
		return nil, &acc
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body.Close()
		return nil, &Error{Status: res.StatusCode, Code: "not_a_stream", Message: "the answer is " + res.Header.Get("Content-Type") + ", not text/event-stream"}
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &Stream{body: res.Body, sc: sc}, nil
}

// Next returns the next event; io.EOF when the stream has ended.
func (s *Stream) Next() (StreamEvent, error) {
	var ev StreamEvent
	var data []string
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if ev.Name == "" && data == nil {
				continue // a keep-alive
			}
			ev.Data = json.RawMessage(strings.Join(data, "\n"))
			if ev.ID != "" {
				s.lastID = ev.ID
			}
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Name = value
		case "id":
			ev.ID = value
		case "data":
			data = append(data, value)
		}
	}
	if err := s.sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return ev, err
	}
	return ev, io.EOF
}

// LastID is the id of the last event read that had one: what to pass as LastEventID
// to continue.
func (s *Stream) LastID() string { return s.lastID }

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }
