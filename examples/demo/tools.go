package demo

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

type order struct {
	Status  string `json:"status"`
	Carrier string `json:"carrier"`
	ETA     string `json:"eta"`
	Items   int    `json:"items"`
	Total   string `json:"total"`
}

func orderBook() map[int]order {
	return map[int]order{
		42:   {Status: "shipped", Carrier: "DHL", ETA: "2026-12-02", Items: 2, Total: "58.40 EUR"},
		7:    {Status: "processing", Carrier: "", ETA: "2026-12-05", Items: 1, Total: "12.00 EUR"},
		1001: {Status: "delivered", Carrier: "UPS", ETA: "2026-11-20", Items: 5, Total: "230.10 EUR"},
	}
}

type lookupArgs struct {
	OrderID int `json:"order_id" jsonschema:"minimum=1,description=The order number"`
}

type refundArgs struct {
	OrderID int `json:"order_id" jsonschema:"minimum=1,description=The order number"`
}

// IntegrationKey is the shop API key order_integration returns: the demo's guardrail
// policy redacts it before the log, the model or a client sees it.
const IntegrationKey = "sk-live-7c1e4b9a2f6d8035"

// Functions are the demo's Go function tools, by name.
func Functions() map[string]fsm.Tool {
	book := orderBook()
	lookup := functool.MustNew("lookup_order", "Look up an order's status, carrier and delivery date.",
		func(_ context.Context, a lookupArgs) (any, error) {
			o, ok := book[a.OrderID]
			if !ok {
				return nil, fmt.Errorf("order %d not found", a.OrderID)
			}
			return map[string]any{"order_id": a.OrderID, "status": o.Status, "carrier": o.Carrier, "eta": o.ETA, "items": o.Items}, nil
		})
	refund := functool.MustNew("refund_status", "Tell whether an order can be refunded and for how much.",
		func(_ context.Context, a refundArgs) (any, error) {
			o, ok := book[a.OrderID]
			if !ok {
				return nil, fmt.Errorf("order %d not found", a.OrderID)
			}
			return map[string]any{"order_id": a.OrderID, "refundable": o.Status == "delivered", "amount": o.Total}, nil
		})
	issue := functool.MustNew("issue_refund", "Refund an order. A person approves every refund before it is paid.",
		func(_ context.Context, a refundArgs) (any, error) {
			o, ok := book[a.OrderID]
			if !ok {
				return nil, fmt.Errorf("order %d not found", a.OrderID)
			}
			return map[string]any{"order_id": a.OrderID, "refunded": o.Total}, nil
		})
	integration := functool.MustNew("order_integration", "Show the shop integration an order reports to: its webhook and API key.",
		func(_ context.Context, a lookupArgs) (any, error) {
			if _, ok := book[a.OrderID]; !ok {
				return nil, fmt.Errorf("order %d not found", a.OrderID)
			}
			return map[string]any{"order_id": a.OrderID, "webhook": fmt.Sprintf("https://shop.example/hooks/%d", a.OrderID), "api_key": IntegrationKey}, nil
		})
	return map[string]fsm.Tool{"lookup_order": lookup, "refund_status": refund, "issue_refund": issue, "order_integration": integration}
}
