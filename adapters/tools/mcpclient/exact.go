package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/turnlog/turnlog/events"
)

// exactTransport checks every tools/call result while it is still JSON text: a
// result holding an integer beyond ±2^53 (which decoding would round without a word)
// becomes an error result naming where, so the call fails instead of recording a
// number the server did not send.
type exactTransport struct{ mcp.Transport }

func (t exactTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &exactConn{Connection: c, calls: map[jsonrpc.ID]bool{}}, nil
}

type exactConn struct {
	mcp.Connection
	mu    sync.Mutex
	calls map[jsonrpc.ID]bool
}

func (c *exactConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/call" && req.ID.IsValid() {
		c.mu.Lock()
		c.calls[req.ID] = true
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c *exactConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil {
		return msg, nil
	}
	c.mu.Lock()
	isCall := c.calls[resp.ID]
	delete(c.calls, resp.ID)
	c.mu.Unlock()
	if !isCall {
		return msg, nil
	}
	if _, err := events.Canonicalize(resp.Result); err != nil {
		text := fmt.Sprintf("turnlog refused the result: %v", err)
		resp.Result, _ = json.Marshal(map[string]any{"isError": true, "content": []map[string]string{{"type": "text", "text": text}}})
	}
	return msg, nil
}
