package functool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

type lookupArgs struct {
	OrderID int    `json:"order_id" jsonschema:"minimum=1"`
	Detail  string `json:"detail,omitempty" jsonschema:"enum=short,enum=full"`
}

func newLookup(t *testing.T) *functool.Tool[lookupArgs] {
	t.Helper()
	return functool.MustNew("lookup_order", "Look an order up", func(_ context.Context, a lookupArgs) (any, error) {
		return map[string]any{"order_id": a.OrderID, "status": "shipped"}, nil
	})
}

func TestSchemaFromStruct(t *testing.T) {
	t.Parallel()
	var schema struct {
		Type                 string                     `json:"type"`
		Required             []string                   `json:"required"`
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties bool                       `json:"additionalProperties"`
	}
	if err := json.Unmarshal(newLookup(t).Spec().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "order_id" || schema.AdditionalProperties {
		t.Fatalf("schema = %+v", schema)
	}
	if _, ok := schema.Properties["detail"]; !ok {
		t.Fatal("schema lacks the optional field")
	}
}

func TestArgumentsValidatedNamingTheField(t *testing.T) {
	t.Parallel()
	tool := newLookup(t)
	cases := []struct{ args, field, msg string }{
		{`{}`, "order_id", "missing"},
		{`{"order_id":"42"}`, "order_id", "want integer"},
		{`{"order_id":0}`, "order_id", "minimum"},
		{`{"order_id":1,"detail":"everything"}`, "detail", "must be"},
		{`{"order_id":1,"colour":"red"}`, "colour", "additional"},
		{`[1]`, "$", "want object"},
	}
	for _, tc := range cases {
		_, err := tool.Call(context.Background(), json.RawMessage(tc.args))
		var ae *fsm.ArgumentsError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: err = %v, want *fsm.ArgumentsError", tc.args, err)
		}
		if ae.Field != tc.field || !strings.Contains(ae.Message, tc.msg) {
			t.Fatalf("%s: got field %q message %q, want field %q and message containing %q", tc.args, ae.Field, ae.Message, tc.field, tc.msg)
		}
	}
	out, err := tool.Call(context.Background(), json.RawMessage(`{"order_id":42}`))
	if err != nil || !strings.Contains(string(out), `"status":"shipped"`) {
		t.Fatalf("valid call = %s, %v", out, err)
	}
}
