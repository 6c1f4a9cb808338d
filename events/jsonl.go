package events

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSONL writes events one JSON object a line: the export and fixture format.
func WriteJSONL(w io.Writer, evs []Event) error {
	bw := bufio.NewWriter(w)
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		bw.Write(line)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ReadJSONL reads events written by WriteJSONL (blank lines are skipped) and
// canonicalizes their data. A line that is not an event is a corrupt_log error naming
// the line in source.
func ReadJSONL(r io.Reader, source string) ([]Event, error) {
	var evs []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", source, line)
		var ev Event
		if err := CheckStrict(raw, &ev); err != nil {
			return nil, &Error{Code: CodeCorruptLog, Field: where, Message: "not an event", Err: err}
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			return nil, &Error{Code: CodeCorruptLog, Field: where, Message: "not an event", Err: err}
		}
		if p := newPayload(ev.Type, ev.V); p != nil {
			if err := CheckStrict(ev.Data, p); err != nil { // the payload's keys in their case
				return nil, &Error{Code: CodeCorruptLog, Field: where, Message: "bad data", Err: err}
			}
		}
		data, err := Canonicalize(ev.Data)
		if err != nil {
			return nil, &Error{Code: CodeCorruptLog, Field: where, Message: "bad data", Err: err}
		}
		ev.Data = data
		evs = append(evs, ev)
	}
	return evs, sc.Err()
}
