package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/turnlog/turnlog/sandbox"
)

// terminateAfter is how long a server has to exit once its stdin is closed, and then
// once it is sent SIGTERM, before it is killed (with every process it started).
const terminateAfter = 2 * time.Second

// stdioTransport speaks MCP over the stdin and stdout of a program in the sandbox,
// started on Connect (behind the allowlist proxy when its spec says so).
type stdioTransport struct {
	srv *sandbox.Server
	ctx context.Context // what the proxy's host checks see
}

func (t stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.srv.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.srv.Cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.srv.Start(t.ctx); err != nil {
		return nil, err
	}
	return (&mcp.IOTransport{Reader: io.NopCloser(stdout), Writer: &serverStdin{WriteCloser: stdin, srv: t.srv}}).Connect(ctx)
}

// serverStdin ends the server as the stdio transport asks: close its stdin, wait,
// SIGTERM, wait, kill; then its proxy closes.
type serverStdin struct {
	io.WriteCloser
	srv *sandbox.Server
}

func (s *serverStdin) Close() error {
	defer s.srv.Close()
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.srv.Cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(terminateAfter):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return ignoreExit(err)
	}
	if s.srv.Cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return ignoreExit(err)
		}
	}
	s.srv.Cmd.Process.Kill()
	if err, ok := wait(); ok {
		return ignoreExit(err)
	}
	return errors.New("the server did not exit")
}

// ignoreExit: a server ending with a status or a signal once asked to stop is fine.
func ignoreExit(err error) error {
	var exit interface{ ExitCode() int }
	if errors.As(err, &exit) {
		return nil
	}
	return err
}
